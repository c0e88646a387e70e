"""Multi-turn agents on the real LangGraph: one thread over several runs, interrupt and resume.

Each invocation of a checkpointed graph is its own ``invoke_agent`` run of one conversation;
a run paused by ``interrupt()`` is recorded as paused (no verdict, not a bail) and the run that
resumes it as an ordinary run whose input is the user's reply.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_shapes_support import (
    BAILS,
    MODES,
    RUNS,
    Tree,
    assert_clean,
    assert_no_content,
    attrs,
    cfg,
    run_with,
    texts,
)
from tests.support.langchain_support import (
    AGENT_SPAN,
    add,
    ask_human,
    call,
    langchain_instrumented,
    react_agent,
    tool_turn,
)

TTFC = semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK
FIRST_CHUNK_METRIC = semconv.CLIENT_TIME_TO_FIRST_CHUNK.name


# --- multi-turn -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_three_turns_on_one_thread_are_three_runs_of_one_conversation(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler, mode: str
) -> None:
    agent = react_agent(
        ScriptedChatModel(["one", "two", "three"]),
        [add],
        checkpointer=InMemorySaver(),
        prompt="You are terse.",
    )
    config = cfg(captured, configurable={"thread_id": "thread-7"})
    for question in ("first?", "second?", "third?"):
        run_with(mode, agent, {"messages": [("user", question)]}, config=config)

    tree = Tree(telemetry.spans())
    runs = tree.named(AGENT_SPAN)
    assert len(runs) == 3 and tree.roots() == runs
    assert len({r.context.trace_id for r in runs if r.context}) == 3
    assert len({attrs(r)[semconv.RUN_ID] for r in runs}) == 3
    chats = tree.named("chat scripted-chat")
    assert [tree.parent(c) for c in chats] == runs
    for span in runs + chats:
        assert attrs(span)[semconv.GEN_AI_CONVERSATION_ID] == "thread-7"
    assert [texts(r) for r in runs] == [[("user", q)] for q in ("first?", "second?", "third?")]
    for chat in chats:  # the system prompt is its own attribute, not a message
        instructions = json.loads(str(attrs(chat)[semconv.GEN_AI_SYSTEM_INSTRUCTIONS]))
        assert instructions == [{"type": "text", "content": "You are terse."}]
    assert texts(chats[2]) == [  # the whole history the model saw on the third turn
        ("user", "first?"),
        ("assistant", "one"),
        ("user", "second?"),
        ("assistant", "two"),
        ("user", "third?"),
    ]
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 3
    assert telemetry.value(BAILS) == 0


def test_conversation_from_session_metadata_without_capture(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    agent = react_agent(ScriptedChatModel(["one", "two"]), [add], checkpointer=InMemorySaver())
    for question in ("first?", "second?"):
        agent.invoke(
            {"messages": [("user", question)]},
            config=cfg(lc, configurable={"thread_id": "t"}, metadata={"session_id": "s-1"}),
        )
    spans = telemetry.spans()
    runs = [s for s in spans if s.name == AGENT_SPAN]
    assert len(runs) == 2
    # LangGraph's thread_id wins over a session id.
    assert {
        attrs(s)[semconv.GEN_AI_CONVERSATION_ID] for s in spans if s.name != "execute_tool"
    } == {"t"}
    assert_no_content(spans)
    assert_clean(telemetry, lc)


def deploy_agent() -> Any:
    model = ScriptedChatModel(
        [AIMessage("", tool_calls=[call("ask_human", {"question": "Deploy?"})]), "Deployed."]
    )
    return react_agent(model, [ask_human], checkpointer=InMemorySaver())


def assert_paused_then_completed(telemetry: InMemoryTelemetry, runs: list[Any]) -> None:
    paused, resumed = (attrs(r) for r in runs)
    assert paused[semconv.RUN_OUTCOME] == "completed"
    assert paused[semconv.RUN_PAUSED] is True
    assert paused[semconv.RUN_PAUSE_KIND] == semconv.PAUSE_INTERRUPT
    assert paused[semconv.RUN_STOP_REASON] == "interrupted"
    assert semconv.RESPONSE_EMPTY not in paused  # waiting for its user: no verdict
    assert [e.name for e in runs[0].events] == [semconv.EVENT_RUN_PAUSED]
    assert resumed[semconv.RUN_OUTCOME] == "completed"
    assert resumed[semconv.RESPONSE_EMPTY] is False
    assert semconv.RUN_PAUSED not in resumed
    assert paused[semconv.GEN_AI_CONVERSATION_ID] == resumed[semconv.GEN_AI_CONVERSATION_ID]
    assert telemetry.value(BAILS) == 0
    assert telemetry.value(RUNS, {semconv.RUN_PAUSED: True}) == 1
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 2


@pytest.mark.parametrize("mode", MODES)
def test_interrupt_then_resume_is_paused_then_completed(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler, mode: str
) -> None:
    """Regression: the paused run carried no ``symfonic.run.paused``."""
    agent = deploy_agent()
    config = cfg(captured, configurable={"thread_id": "deploy-1"})
    paused = run_with(mode, agent, {"messages": [("user", "deploy it")]}, config=config)
    assert "__interrupt__" in paused
    resumed = run_with(mode, agent, Command(resume="yes"), config=config)
    assert resumed["messages"][-1].content == "Deployed."

    tree = Tree(telemetry.spans())
    runs = tree.named(AGENT_SPAN)
    assert len(runs) == 2 and tree.roots() == runs
    assert_paused_then_completed(telemetry, runs)
    assert texts(runs[1]) == [("user", "yes")]  # the resumed run's input is the user's reply
    first_tool, second_tool = tree.named("execute_tool ask_human")
    assert tree.parent(first_tool) is runs[0] and tree.parent(second_tool) is runs[1]
    assert semconv.ERROR_TYPE not in attrs(first_tool)
    assert json.loads(str(attrs(second_tool)[semconv.GEN_AI_TOOL_CALL_RESULT])) == "yes"


def test_interrupt_in_a_sub_graph_pauses_both_runs(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel(
        [AIMessage("", tool_calls=[call("ask_human", {"question": "Deploy?"})]), "Deployed."]
    )
    graph = StateGraph(MessagesState)
    graph.add_node("deploy", react_agent(model, [ask_human], name="deployer"))
    graph.add_edge(START, "deploy")
    graph.add_edge("deploy", END)
    app = graph.compile(checkpointer=InMemorySaver())
    config = cfg(captured, configurable={"thread_id": "deploy-2"}, run_name="ops")

    async def turns() -> None:
        await app.ainvoke({"messages": [("user", "deploy it")]}, config=config)
        await app.ainvoke(Command(resume="yes"), config=config)

    asyncio.run(turns())
    tree = Tree(telemetry.spans())
    outer = tree.named("invoke_agent ops")
    inner = tree.named("invoke_agent deployer")
    assert len(outer) == len(inner) == 2
    assert [tree.parent(s) for s in inner] == outer
    assert [attrs(s).get(semconv.RUN_PAUSED) for s in outer + inner] == [True, None, True, None]
    assert telemetry.value(BAILS) == 0
    assert telemetry.value(RUNS, {semconv.RUN_PAUSED: True}) == 2
    assert attrs(inner[1])[semconv.RESPONSE_EMPTY] is False


@pytest.mark.parametrize("breakpoint", ["interrupt_before", "interrupt_after"])
@pytest.mark.parametrize("mode", MODES)
def test_static_breakpoint_is_paused_not_a_bail(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler, breakpoint: str, mode: str
) -> None:
    """Regression: a run stopped at a static breakpoint on a tool-calling message counted as a
    ``tool_calls_with_no_text`` bail; LangGraph's ``on_interrupt`` says it paused."""
    where = {"interrupt_before": ["tools"], "interrupt_after": ["agent"]}[breakpoint]
    agent = react_agent(
        ScriptedChatModel([tool_turn(), "The sum is 3."]),
        [add],
        checkpointer=InMemorySaver(),
        **{breakpoint: where},
    )
    config = cfg(captured, configurable={"thread_id": f"bp-{breakpoint}-{mode}"})
    paused = run_with(mode, agent, {"messages": [("user", "1+2")]}, config=config)
    assert paused["messages"][-1].tool_calls  # stopped on the tool-calling turn
    resumed = run_with(mode, agent, None, config=config)
    assert resumed["messages"][-1].content == "The sum is 3."

    tree = Tree(telemetry.spans())
    runs = tree.named(AGENT_SPAN)
    assert len(runs) == 2 and tree.roots() == runs
    assert_paused_then_completed(telemetry, runs)
    assert semconv.REACT_TERMINATION_REASON not in attrs(runs[0])
    assert [s.name for s in tree.children(runs[1])] == ["execute_tool add", "chat scripted-chat"]
    # The resume is invoked with no input: no empty user message is made up for it.
    assert "1+2" in str(attrs(runs[0])[semconv.GEN_AI_INPUT_MESSAGES])
    assert semconv.GEN_AI_INPUT_MESSAGES not in attrs(runs[1])


def test_interrupt_under_the_instrumentor_is_paused_without_callback_errors(
    telemetry: InMemoryTelemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression: the instrumentor's handler sits in LangGraph's lifecycle callback manager
    too, which logged "Error in LangChainCallbackHandler.on_interrupt callback"."""
    with langchain_instrumented(telemetry) as instrumentor, caplog.at_level(logging.WARNING):
        agent = deploy_agent()
        config = cfg(configurable={"thread_id": "deploy-3"})
        agent.invoke({"messages": [("user", "deploy it")]}, config=config)
        agent.invoke(Command(resume="yes"), config=config)
        handler = instrumentor.callback_handler
        assert handler is not None
        assert handler.tracked_runs == 0 and handler.tracked_calls == 0
        assert handler.internal_failures == {}
    assert not [r.getMessage() for r in caplog.records if "callback" in r.getMessage()]
    runs = Tree(telemetry.spans()).named(AGENT_SPAN)
    assert len(runs) == 2
    assert_paused_then_completed(telemetry, runs)
