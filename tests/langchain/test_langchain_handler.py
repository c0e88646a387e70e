"""LangChainCallbackHandler on the real LangGraph ReAct agent: span tree, metrics, bails, errors."""

from __future__ import annotations

import inspect
from typing import Any, cast
from uuid import uuid4

import pytest
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from langgraph.prebuilt import ToolNode
from langgraph.types import Command
from opentelemetry import baggage, context, trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.trace import StatusCode

from symfonic_otel import LangChainCallbackHandler, OTelCallbackHandler, semconv, tenant_scope
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import (
    AGENT_SPAN,
    USAGE,
    add,
    ask_human,
    assert_one_tree_per_run,
    broken,
    call,
    model_only_graph,
    raw_react_graph,
    react_agent,
    scripted_agent,
    tool_turn,
)

RUNS = semconv.AGENT_RUNS.name
BAILS = semconv.SILENT_BAILS.name
DURATION = semconv.CLIENT_OPERATION_DURATION.name
TOKENS = semconv.CLIENT_TOKEN_USAGE.name


def cfg(handler: LangChainCallbackHandler, **extra: Any) -> RunnableConfig:
    return cast(RunnableConfig, {"callbacks": [handler], **extra})


def loop_end_event(telemetry: InMemoryTelemetry) -> dict[str, Any]:
    events = [
        e for e in telemetry.span(AGENT_SPAN).events if e.name == semconv.EVENT_REACT_LOOP_END
    ]
    assert len(events) == 1
    return dict(events[0].attributes or {})


def test_react_agent_span_tree_and_metrics(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    agent = scripted_agent(tool_turn(), AIMessage("The sum is 3.", usage_metadata=USAGE))
    result = agent.invoke({"messages": [("user", "what is 1+2?")]}, config=cfg(lc))
    assert result["messages"][-1].content == "The sum is 3."

    assert_one_tree_per_run(telemetry.spans(), runs=1, chats=2, tools=1)
    root = telemetry.span(AGENT_SPAN)
    assert root.parent is None
    assert root.attributes is not None
    assert root.attributes[semconv.RUN_OUTCOME] == "completed"
    assert root.attributes[semconv.RESPONSE_EMPTY] is False
    assert semconv.REACT_TERMINATION_REASON not in root.attributes
    assert root.status.status_code is StatusCode.UNSET

    chats = sorted(
        (s for s in telemetry.spans() if s.name == "chat scripted-chat"),
        key=lambda s: s.start_time or 0,
    )
    assert [(s.attributes or {})[semconv.REACT_ITERATION_INDEX] for s in chats] == [0, 1]
    first = chats[0].attributes or {}
    assert first[semconv.GEN_AI_REQUEST_MODEL] == "scripted-chat"
    assert first[semconv.NODE_NAME] == "agent"
    assert first[semconv.GEN_AI_PROVIDER_NAME] == "scriptedchatmodel"
    assert first[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 11
    assert first[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 7
    for span in chats:
        assert span.start_time is not None and span.end_time is not None
        assert span.end_time >= span.start_time
    tool_span = telemetry.span("execute_tool add")
    assert (tool_span.attributes or {})[semconv.GEN_AI_TOOL_CALL_ID] == "c1"

    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 1
    assert telemetry.value(BAILS) == 0
    assert telemetry.value(DURATION, {semconv.GEN_AI_REQUEST_MODEL: "scripted-chat"}) == 2
    assert telemetry.value(TOKENS, {semconv.GEN_AI_TOKEN_TYPE: "input"}) == 2
    assert telemetry.value(semconv.DROPPED_EVENTS.name) == 0


def test_query_is_the_last_human_message(telemetry: InMemoryTelemetry) -> None:
    lc = LangChainCallbackHandler(handler=telemetry.handler(capture_content=True))
    agent = scripted_agent("hello")
    agent.invoke(
        {"messages": [("user", "first question"), ("ai", "answer"), ("user", "second question")]},
        config=cfg(lc),
    )
    attributes = telemetry.span(AGENT_SPAN).attributes or {}
    assert "second question" in str(attributes[semconv.GEN_AI_INPUT_MESSAGES])
    assert "first question" not in str(attributes[semconv.GEN_AI_INPUT_MESSAGES])
    assert "hello" in str(attributes[semconv.GEN_AI_OUTPUT_MESSAGES])


def test_empty_final_message_is_a_silent_bail(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    agent = scripted_agent(tool_turn(), AIMessage(content=""))
    agent.invoke({"messages": [("user", "1+2?")]}, config=cfg(lc))

    assert (
        telemetry.value(BAILS, {semconv.REACT_TERMINATION_REASON: "no_content_no_tool_calls"}) == 1
    )
    event = loop_end_event(telemetry)
    assert event[semconv.REACT_ITERATION_INDEX] == 1
    assert event[semconv.REACT_CONTENT_TYPE] == "str"
    assert event[semconv.REACT_HAS_TOOL_CALLS] is False
    root = telemetry.span(AGENT_SPAN).attributes or {}
    assert root[semconv.REACT_TERMINATION_REASON] == "no_content_no_tool_calls"
    assert root[semconv.RESPONSE_EMPTY] is True
    assert root[semconv.RUN_OUTCOME] == "completed"
    assert telemetry.value(RUNS, {semconv.RESPONSE_EMPTY: True}) == 1


def test_block_list_without_text_blocks_is_a_bail(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    thinking = AIMessage(content=[{"type": "thinking", "thinking": "hmm", "signature": "s"}])
    scripted_agent(thinking).invoke({"messages": [("user", "hi")]}, config=cfg(lc))
    assert loop_end_event(telemetry)[semconv.REACT_CONTENT_TYPE] == "list"
    assert (
        telemetry.value(BAILS, {semconv.REACT_TERMINATION_REASON: "no_content_no_tool_calls"}) == 1
    )


def test_block_list_with_text_is_not_a_bail(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    blocks = AIMessage(content=[{"type": "text", "text": "All done."}])
    scripted_agent(blocks).invoke({"messages": [("user", "hi")]}, config=cfg(lc))
    assert telemetry.value(BAILS) == 0
    assert (telemetry.span(AGENT_SPAN).attributes or {})[semconv.RESPONSE_EMPTY] is False


def test_final_tool_calls_without_text_is_a_bail(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    graph = model_only_graph(ScriptedChatModel([tool_turn()]))
    graph.invoke({"messages": [("user", "1+2?")]}, config=cfg(lc))
    assert (
        telemetry.value(BAILS, {semconv.REACT_TERMINATION_REASON: "tool_calls_with_no_text"}) == 1
    )
    event = loop_end_event(telemetry)
    assert event[semconv.REACT_HAS_TOOL_CALLS] is True
    assert event[semconv.REACT_TOOL_CALL_COUNT] == 1
    assert event[semconv.REACT_ITERATION_INDEX] == 0


def test_recursion_limit_is_a_bail_with_outcome_error(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel([tool_turn(call_id=f"c{i}") for i in range(10)])
    graph = raw_react_graph(model, [add])
    with pytest.raises(GraphRecursionError):
        graph.invoke({"messages": [("user", "1+2?")]}, config=cfg(lc, recursion_limit=5))

    chats = [s for s in telemetry.spans() if s.name.startswith("chat")]
    root = telemetry.span(AGENT_SPAN)
    attributes = root.attributes or {}
    assert attributes[semconv.RUN_OUTCOME] == "error"
    assert attributes[semconv.ERROR_TYPE] == "GraphRecursionError"
    assert attributes[semconv.REACT_TERMINATION_REASON] == "tool_calls_with_no_text"
    assert root.status.status_code is StatusCode.ERROR
    event = loop_end_event(telemetry)
    assert event[semconv.REACT_ITERATION_INDEX] == len(chats) - 1
    assert event[semconv.REACT_HAS_TOOL_CALLS] is True
    assert (
        telemetry.value(BAILS, {semconv.REACT_TERMINATION_REASON: "tool_calls_with_no_text"}) == 1
    )
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "error"}) == 1


def test_interrupt_is_not_an_error_and_not_a_bail(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel(
        [
            AIMessage("", tool_calls=[call("ask_human", {"question": "Deploy?"})]),
            "Deployed.",
        ]
    )
    agent = react_agent(model, [ask_human], checkpointer=InMemorySaver())
    config = cfg(lc, configurable={"thread_id": "t-1"})

    paused = agent.invoke({"messages": [("user", "deploy it")]}, config=config)
    assert "__interrupt__" in paused
    resumed = agent.invoke(Command(resume="yes"), config=config)
    assert resumed["messages"][-1].content == "Deployed."

    spans = telemetry.spans()
    assert all(s.status.status_code is not StatusCode.ERROR for s in spans), [
        (s.name, s.status) for s in spans if s.status.status_code is StatusCode.ERROR
    ]
    assert all(semconv.ERROR_TYPE not in (s.attributes or {}) for s in spans)
    agents = [s for s in spans if s.name == AGENT_SPAN]
    assert [(s.attributes or {})[semconv.RUN_OUTCOME] for s in agents] == ["completed"] * 2
    assert telemetry.value(BAILS) == 0
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 2
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "error"}) == 0
    assert len([s for s in spans if s.name == "execute_tool ask_human"]) == 2


def test_model_error_ends_run_and_call_as_errors(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    agent = scripted_agent(tool_turn(), RuntimeError("provider down"))
    with pytest.raises(RuntimeError):
        agent.invoke({"messages": [("user", "1+2?")]}, config=cfg(lc))

    root = telemetry.span(AGENT_SPAN)
    assert (root.attributes or {})[semconv.ERROR_TYPE] == "RuntimeError"
    assert root.status.status_code is StatusCode.ERROR
    failed = [s for s in telemetry.spans() if s.status.status_code is StatusCode.ERROR]
    assert {s.name for s in failed} == {AGENT_SPAN, "chat scripted-chat"}
    assert telemetry.value(DURATION, {semconv.ERROR_TYPE: "RuntimeError"}) == 1
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "error"}) == 1
    assert telemetry.value(BAILS) == 0


def test_tool_error_marks_the_tool_span(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel([AIMessage("", tool_calls=[call("broken", {"x": 1})]), "Sorry."])
    tools = ToolNode([broken], handle_tool_errors=True)
    react_agent(model, tools).invoke({"messages": [("user", "go")]}, config=cfg(lc))
    span = telemetry.span("execute_tool broken")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})[semconv.ERROR_TYPE] == "ValueError"
    assert (telemetry.span(AGENT_SPAN).attributes or {})[semconv.RUN_OUTCOME] == "completed"


def agent_tenant(telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler, **config: Any) -> str:
    scripted_agent("ok").invoke({"messages": [("user", "hi")]}, config=cfg(lc, **config))
    spans = [s for s in telemetry.spans() if s.name == AGENT_SPAN]
    return str((spans[-1].attributes or {})[semconv.TENANT_ID])


def test_tenant_from_metadata_and_scope(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    assert agent_tenant(telemetry, lc, metadata={"tenant_id": "acme"}) == "acme"
    with tenant_scope("scoped"):
        assert agent_tenant(telemetry, lc, metadata={"tenant_id": "acme"}) == "scoped"
    assert agent_tenant(telemetry, lc) == semconv.TENANT_UNKNOWN
    chats = [s for s in telemetry.spans() if s.name.startswith("chat")]
    assert (chats[0].attributes or {})[semconv.TENANT_ID] == "acme"


def test_inbound_baggage_cannot_choose_the_tenant(telemetry: InMemoryTelemetry) -> None:
    """A client's W3C ``baggage: tenant.id=...`` header, extracted as an HTTP server would."""
    if "tenant_from_baggage" not in inspect.signature(OTelCallbackHandler).parameters:
        pytest.skip("the core handler has no tenant trust model (tenant_from_baggage) yet")
    inbound = W3CBaggagePropagator().extract({"baggage": "tenant.id=globex"})
    untrusting = LangChainCallbackHandler(handler=telemetry.handler())
    trusting = LangChainCallbackHandler(handler=telemetry.handler(tenant_from_baggage=True))
    token = context.attach(inbound)
    try:
        assert baggage.get_baggage(semconv.BAGGAGE_TENANT_KEY) == "globex"
        assert agent_tenant(telemetry, untrusting) == semconv.TENANT_UNKNOWN
        assert agent_tenant(telemetry, untrusting, metadata={"tenant_id": "acme"}) == "acme"
        assert agent_tenant(telemetry, trusting) == "globex"
        assert agent_tenant(telemetry, trusting, metadata={"tenant_id": "acme"}) == "acme"
    finally:
        context.detach(token)


def test_agent_span_nests_under_the_callers_span(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    tracer = telemetry.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("http request") as outer:
        scripted_agent(tool_turn(), "3").invoke({"messages": [("user", "1+2")]}, config=cfg(lc))
        # Nothing of ours is left current in the caller's context.
        assert trace.get_current_span() is outer
    root = telemetry.span(AGENT_SPAN)
    assert root.parent is not None and root.parent.span_id == outer.get_span_context().span_id
    assert_one_tree_per_run(
        [s for s in telemetry.spans() if s.name != "http request"], runs=1, chats=2, tools=1
    )


def test_plain_chain_and_bare_model_call(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    """A top-level LCEL chain is an agent run; a bare model call still gets chat telemetry."""
    from langchain_core.prompts import ChatPromptTemplate

    model = ScriptedChatModel(["chain answer", "bare answer"])
    chain = ChatPromptTemplate.from_messages([("user", "{q}")]) | model
    chain.invoke({"q": "hi"}, config=cfg(lc))
    assert (telemetry.span(AGENT_SPAN).attributes or {})[semconv.RESPONSE_EMPTY] is False
    model.invoke("hello", config=cfg(lc))
    assert len([s for s in telemetry.spans() if s.name == "chat scripted-chat"]) == 2
    assert telemetry.value(DURATION) == 2
    assert telemetry.value(RUNS) == 1


def test_nested_subgraph_is_a_sub_agent_run_under_its_parent(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    from langgraph.graph import START, MessagesState, StateGraph

    inner = scripted_agent(tool_turn(), "3")
    outer = StateGraph(MessagesState)
    outer.add_node("delegate", inner)
    outer.add_edge(START, "delegate")
    graph: Any = outer.compile()
    graph.invoke({"messages": [("user", "1+2")]}, config=cfg(lc))

    agents = sorted(
        (s for s in telemetry.spans() if s.name == AGENT_SPAN), key=lambda s: s.start_time or 0
    )
    assert len(agents) == 2
    top, sub = agents
    assert top.parent is None and top.context is not None and sub.context is not None
    assert sub.parent is not None and sub.parent.span_id == top.context.span_id
    top_attributes, sub_attributes = top.attributes or {}, sub.attributes or {}
    assert sub_attributes[semconv.RUN_PARENT_ID] == top_attributes[semconv.RUN_ID]
    assert sub_attributes[semconv.RUN_OUTCOME] == "completed"
    calls = [s for s in telemetry.spans() if s.name.startswith(("chat", "execute_tool"))]
    assert len(calls) == 3
    for span in calls:  # the sub-agent's model and tool calls are its own
        assert span.parent is not None and span.parent.span_id == sub.context.span_id
        assert (span.attributes or {})[semconv.RUN_ID] == sub_attributes[semconv.RUN_ID]
    assert telemetry.value(RUNS) == 2  # each agent run is counted


# --- robustness --------------------------------------------------------------------------------


def test_callbacks_never_raise_on_garbage(telemetry: InMemoryTelemetry) -> None:
    lc = LangChainCallbackHandler(handler=telemetry.handler())
    junk: list[Any] = [None, 1, "x", object(), {"messages": 5}, [None], {"messages": [None, 3]}]
    root = uuid4()
    for value in junk:
        lc.on_chain_start(value, value, run_id=root, metadata=value)
        child = uuid4()
        lc.on_chat_model_start(value, value, run_id=child, parent_run_id=root, metadata=value)
        lc.on_llm_end(value, run_id=child, parent_run_id=root)
        tool = uuid4()
        lc.on_tool_start(value, value, run_id=tool, parent_run_id=root)
        lc.on_tool_error(BaseException(), run_id=tool, parent_run_id=root)
        lc.on_llm_error(value, run_id=uuid4())
        lc.on_chain_end(value, run_id=uuid4(), parent_run_id=uuid4())
    lc.on_chain_end(junk[-1], run_id=root)
    assert lc.tracked_runs == 0 and lc.tracked_calls == 0
    assert telemetry.value(RUNS) == 1


def test_state_follows_core_eviction(telemetry: InMemoryTelemetry) -> None:
    """Runs the core abandons (cap) are pruned here too, their open tool spans ended."""
    lc = LangChainCallbackHandler(handler=telemetry.handler(max_open_runs=2))
    for _ in range(6):
        root = uuid4()
        lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
        lc.on_tool_start({"name": "add"}, "", run_id=uuid4(), parent_run_id=root)
    assert lc.tracked_runs <= 3
    assert lc.handler.open_runs == 2
    assert len([s for s in telemetry.spans() if s.name == "execute_tool add"]) >= 3
    assert lc.handler.close_open_runs() == 2
    assert telemetry.value(semconv.ORPHANED_RUNS.name) == 6
    # The remaining ends arrive late: nothing is double-counted, nothing raises.
    lc.on_chain_end({}, run_id=root)
    lc.on_chain_start({}, {}, run_id=uuid4())  # next start prunes what the core closed
    lc.handler.close_open_runs()
    assert lc.tracked_runs <= 1


def test_handler_and_options_are_exclusive(telemetry: InMemoryTelemetry) -> None:
    with pytest.raises(TypeError):
        LangChainCallbackHandler(handler=telemetry.handler(), agent_name="x")
