"""Agent topologies on the real LangGraph: sub-graphs, fan-out, concurrent async turns.

A compiled graph as a node, a graph run inside a tool, ``Send`` fan-out with parallel branches
(one of them failing), node spans, a run timed out mid-tool, concurrent async turns of
different tenants. Each checks the span tree and parenting, the run verdicts, and that the
adapter kept no state and swallowed nothing.
"""

from __future__ import annotations

import asyncio
import json
import operator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Send
from opentelemetry.sdk.metrics.export import HistogramDataPoint
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_shapes_support import (
    BAILS,
    RUNS,
    Tree,
    attrs,
    cfg,
    one_node_graph,
    research_then_answer,
    research_tool,
    texts,
)
from tests.support.langchain_support import (
    AGENT_SPAN,
    ConversationModel,
    add,
    call,
    question,
    react_agent,
    slow,
    tool_turn,
)

# --- sub-graphs and fan-out -----------------------------------------------------------------


def test_compiled_sub_graph_with_node_spans_nests_node_run_node_call(
    telemetry: InMemoryTelemetry, noded: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel(["found it", "the answer"])
    app = research_then_answer(one_node_graph("inner", model, "researcher"), model)
    asyncio.run(app.ainvoke({"messages": [("user", "q")]}, config=cfg(noded, run_name="boss")))

    tree = Tree(telemetry.spans())
    boss = tree.one("invoke_agent boss")
    assert [s.name for s in tree.children(boss)] == ["invoke_node research", "invoke_node answer"]
    research, answer = tree.children(boss)
    (researcher,) = tree.children(research)
    assert researcher.name == "invoke_agent researcher"
    assert attrs(researcher)[semconv.RUN_PARENT_ID] == attrs(boss)[semconv.RUN_ID]
    (inner,) = tree.children(researcher)
    assert inner.name == "invoke_node inner"
    assert [s.name for s in tree.children(inner)] == ["chat scripted-chat"]
    assert [s.name for s in tree.children(answer)] == ["chat scripted-chat"]
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 2
    assert telemetry.value(BAILS) == 0


def test_graph_invoked_inside_a_tool_is_a_sub_agent_under_the_tool(
    telemetry: InMemoryTelemetry, noded: LangChainCallbackHandler
) -> None:
    research = research_tool()

    model = ScriptedChatModel(
        [AIMessage("", tool_calls=[call("research", {"topic": "life"})]), "It is 42."]
    )
    react_agent(model, [research]).invoke({"messages": [("user", "meaning?")]}, config=cfg(noded))

    tree = Tree(telemetry.spans())
    outer, sub = tree.named(AGENT_SPAN)
    tools_node = tree.one("invoke_node tools")
    tool_span = tree.one("execute_tool research")
    assert tree.parent(tools_node) is outer and tree.parent(tool_span) is tools_node
    assert tree.children(tool_span) == [sub]
    assert attrs(sub)[semconv.RUN_PARENT_ID] == attrs(outer)[semconv.RUN_ID]
    assert texts(sub) == [("user", "life")]
    sub_chat = next(s for s in tree.under(sub) if s.name.startswith("chat"))
    assert attrs(sub_chat)[semconv.RUN_ID] == attrs(sub)[semconv.RUN_ID]
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 2


class FanState(TypedDict):
    topics: list[str]
    answers: Annotated[list[str], operator.add]


def fan_out(worker: Any) -> Any:
    """``plan`` sends each topic to a parallel ``worker`` branch, then ``summarize``."""

    def route(state: FanState) -> list[Send]:
        return [Send("worker", {"topic": t}) for t in state["topics"]]

    graph = StateGraph(FanState)
    graph.add_node("plan", lambda state: {})
    graph.add_node("worker", worker)
    graph.add_node("summarize", lambda state: {"answers": []})
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", route, ["worker"])
    graph.add_edge("worker", "summarize")
    graph.add_edge("summarize", END)
    return graph.compile()


TOPICS = ["1+2", "3+4", "5+6"]


def assert_branches_apart(tree: Tree, top: ReadableSpan, *, node_spans: bool) -> None:
    """One sub-agent per branch, each holding only its own question's calls."""
    subs = [s for s in tree.named(AGENT_SPAN) if s is not top]
    assert len(subs) == len(TOPICS)
    if node_spans:
        workers = tree.named("invoke_node worker")
        assert len(workers) == len(TOPICS)
        assert sorted(id(tree.parent(s)) for s in subs) == sorted(id(w) for w in workers)
        assert all(tree.parent(w) is top for w in workers)
    else:
        assert all(tree.parent(s) is top for s in subs)
    seen = set()
    for sub in subs:
        (topic,) = [text for _, text in texts(sub)]
        a, b = topic.split("+")
        seen.add(topic)
        below = tree.under(sub)
        assert {s.name for s in below if not s.name.startswith("invoke_node")} == {
            "chat conversation-model",
            "execute_tool add",
        }
        assert all(attrs(s)[semconv.RUN_ID] == attrs(sub)[semconv.RUN_ID] for s in below)
        (tool_span,) = [s for s in below if s.name == "execute_tool add"]
        assert attrs(tool_span)[semconv.GEN_AI_TOOL_CALL_ID] == f"call-{a}-{b}"
        assert json.loads(str(attrs(tool_span)[semconv.GEN_AI_TOOL_CALL_RESULT])) == str(
            int(a) + int(b)
        )
        assert attrs(sub)[semconv.RESPONSE_EMPTY] is False
    assert seen == set(TOPICS)


def test_send_fan_out_runs_parallel_branches_apart(
    telemetry: InMemoryTelemetry, noded: LangChainCallbackHandler
) -> None:
    agent = react_agent(ConversationModel(), [add])

    def worker(state: dict[str, str]) -> dict[str, list[str]]:
        result = agent.invoke({"messages": [("user", state["topic"])]})
        return {"answers": [result["messages"][-1].content]}

    out = fan_out(worker).invoke({"topics": TOPICS, "answers": []}, config=cfg(noded))
    assert sorted(out["answers"]) == ["The sum is 11.", "The sum is 3.", "The sum is 7."]
    tree = Tree(telemetry.spans())
    (top,) = tree.roots()
    assert_branches_apart(tree, top, node_spans=True)
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 4


def test_async_send_fan_out_runs_concurrent_branches_apart(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    agent = react_agent(ConversationModel(), [add])

    async def worker(state: dict[str, str]) -> dict[str, list[str]]:
        result = await agent.ainvoke({"messages": [("user", state["topic"])]})
        return {"answers": [result["messages"][-1].content]}

    asyncio.run(fan_out(worker).ainvoke({"topics": TOPICS, "answers": []}, config=cfg(captured)))
    tree = Tree(telemetry.spans())
    (top,) = tree.roots()
    assert_branches_apart(tree, top, node_spans=False)
    assert telemetry.value(BAILS) == 0


def test_failing_fan_out_branch_errors_the_run_and_cancels_its_siblings(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    slow = ScriptedChatModel([tool_turn(), tool_turn()], latency_s=5.0)  # cancelled first
    agent = react_agent(slow, [add])

    async def worker(state: dict[str, str]) -> dict[str, list[str]]:
        if state["topic"] == "bad":
            await asyncio.sleep(0.05)  # the other branches wait on their model meanwhile
            raise ValueError("bad topic")
        result = await agent.ainvoke({"messages": [("user", state["topic"])]})
        return {"answers": [result["messages"][-1].content]}

    app = fan_out(worker)
    with pytest.raises(ValueError):
        asyncio.run(app.ainvoke({"topics": ["1+2", "bad", "3+4"], "answers": []}, cfg(captured)))

    tree = Tree(telemetry.spans())
    (top,) = tree.roots()
    assert attrs(top)[semconv.RUN_OUTCOME] == "error"
    assert attrs(top)[semconv.ERROR_TYPE] == "ValueError"
    assert top.status.status_code is StatusCode.ERROR
    branches = [s for s in tree.named(AGENT_SPAN) if s is not top]
    assert len(branches) == 2 and all(tree.parent(s) is top for s in branches)
    assert {attrs(s)[semconv.RUN_OUTCOME] for s in branches} == {"cancelled"}
    # Regression: the branches' model calls, cancelled mid-call, vanished from the trace.
    chats = tree.named("chat scripted-chat")
    assert len(chats) == 2 and {tree.parent(c) for c in chats} == set(branches)
    assert all(attrs(c)[semconv.STEP_UNFINISHED] is True for c in chats)
    assert all(c.status.status_code is not StatusCode.ERROR for c in chats)
    assert all(semconv.RESPONSE_EMPTY not in attrs(s) for s in branches)
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "cancelled"}) == 2
    assert telemetry.value(BAILS) == 0


def test_run_timed_out_mid_tool_ends_the_tool_span_unfinished(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel([AIMessage("", tool_calls=[call("slow", {"seconds": 30})])])
    agent = react_agent(model, [slow])

    async def with_timeout() -> None:
        await asyncio.wait_for(agent.ainvoke({"messages": [("user", "wait")]}, cfg(captured)), 0.2)

    with pytest.raises(TimeoutError):
        asyncio.run(with_timeout())
    tree = Tree(telemetry.spans())
    root = tree.one(AGENT_SPAN)
    tool_span = tree.one("execute_tool slow")
    assert tree.parent(tool_span) is root
    assert attrs(tool_span)[semconv.STEP_UNFINISHED] is True
    assert semconv.STEP_UNFINISHED not in attrs(tree.one("chat scripted-chat"))
    assert attrs(root)[semconv.RUN_OUTCOME] == "cancelled"
    assert telemetry.value(BAILS) == 0


# --- concurrent async turns -----------------------------------------------------------------


def test_concurrent_async_turns_of_different_tenants_stay_apart(
    telemetry: InMemoryTelemetry, noded: LangChainCallbackHandler
) -> None:
    agent = react_agent(ConversationModel(), [add])
    turns = range(6)

    async def all_turns() -> list[Any]:
        return await asyncio.gather(
            *(
                agent.ainvoke(
                    question(i),
                    config=cfg(
                        noded,
                        metadata={"tenant_id": f"tenant-{i}"},
                        configurable={"thread_id": f"thread-{i}"},
                    ),
                )
                for i in turns
            )
        )

    results = asyncio.run(all_turns())
    assert [r["messages"][-1].content for r in results] == [
        f"The sum is {2 * i + 1}." for i in turns
    ]

    tree = Tree(telemetry.spans())
    runs = tree.roots()
    assert len(runs) == len(turns) and all(r.name == AGENT_SPAN for r in runs)
    run_span_ids: dict[str, int] = {}
    for run in runs:
        tenant = attrs(run)[semconv.TENANT_ID]
        i = int(str(tenant).removeprefix("tenant-"))
        assert attrs(run)[semconv.GEN_AI_CONVERSATION_ID] == f"thread-{i}"
        assert texts(run) == [("user", f"{i}+{i + 1}")]
        below = tree.under(run)
        assert len(below) == 6  # agent, tools, agent nodes; two chats and the tool
        assert all(attrs(s)[semconv.TENANT_ID] == tenant for s in below)
        assert all(
            s.context and run.context and s.context.trace_id == run.context.trace_id for s in below
        )
        (tool_span,) = [s for s in below if s.name == "execute_tool add"]
        assert attrs(tool_span)[semconv.GEN_AI_TOOL_CALL_ID] == f"call-{i}-{i + 1}"
        assert run.context is not None
        run_span_ids[str(tenant)] = run.context.span_id
    # The run-duration histogram carries no tenant; its exemplars lead to the tenants' runs.
    metric = telemetry.metrics()[semconv.AGENT_DURATION.name]
    for point in metric.data.data_points:
        assert isinstance(point, HistogramDataPoint)
        assert semconv.TENANT_ID not in dict(point.attributes or {})
        exemplars = {e.span_id for e in point.exemplars}
        assert exemplars and exemplars <= set(run_span_ids.values())
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == len(turns)
    assert telemetry.value(BAILS) == 0


def test_concurrent_async_turns_with_sub_agents_never_cross_parent(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    graph = StateGraph(MessagesState)
    graph.add_node("solve", react_agent(ConversationModel(), [add], name="solver"))
    graph.add_edge(START, "solve")
    graph.add_edge("solve", END)
    desk = graph.compile(name="desk")
    turns = range(5)

    async def all_turns() -> None:
        await asyncio.gather(
            *(
                desk.ainvoke(question(i), config=cfg(captured, metadata={"tenant_id": f"t-{i}"}))
                for i in turns
            )
        )

    asyncio.run(all_turns())
    tree = Tree(telemetry.spans())
    desks = tree.roots()
    assert len(desks) == len(turns) and {s.name for s in desks} == {"invoke_agent desk"}
    for top in desks:
        tenant = attrs(top)[semconv.TENANT_ID]
        i = int(str(tenant).removeprefix("t-"))
        (solver,) = tree.children(top)
        assert solver.name == "invoke_agent solver"
        assert attrs(solver)[semconv.RUN_PARENT_ID] == attrs(top)[semconv.RUN_ID]
        below = tree.under(solver)
        assert sorted(s.name for s in below) == [
            "chat conversation-model",
            "chat conversation-model",
            "execute_tool add",
        ]
        assert all(attrs(s)[semconv.TENANT_ID] == tenant for s in [solver, *below])
        assert all(attrs(s)[semconv.RUN_ID] == attrs(solver)[semconv.RUN_ID] for s in below)
        (tool_span,) = tree.named_under(solver, "execute_tool add")
        assert attrs(tool_span)[semconv.GEN_AI_TOOL_CALL_ID] == f"call-{i}-{i + 1}"
        assert texts(top, semconv.GEN_AI_OUTPUT_MESSAGES) == [
            ("assistant", f"The sum is {2 * i + 1}.")
        ]
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 2 * len(turns)
    assert telemetry.value(BAILS) == 0
