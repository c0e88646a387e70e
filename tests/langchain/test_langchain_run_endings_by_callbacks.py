"""How a run ended, told by the callbacks alone, in the orders LangChain and LangGraph send them:
a tool that raised an interrupt pauses its run even when the run then ends normally; a sub-agent
run's pause and step cap are relayed to its parent; a sub-agent run starts when its graph
started and under the span it ran inside; an agent run's duration is in milliseconds."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

from langchain_core.messages import AIMessage
from langgraph.errors import GraphInterrupt
from opentelemetry.sdk.trace import ReadableSpan

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_callbacks import GRAPH, start_first_node, start_sub_agent


def _run_span(telemetry: InMemoryTelemetry, name: str = "invoke_agent symfonic") -> ReadableSpan:
    (span,) = [s for s in telemetry.spans() if s.name == name]
    return span


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _bails(telemetry: InMemoryTelemetry) -> float:
    return telemetry.value(semconv.SILENT_BAILS.name)


def _blank() -> dict[str, Any]:
    """A final state whose last AI message has no text: a bail, unless the run paused."""
    return {"messages": [AIMessage(content="", id="m-1")]}


def test_a_tool_that_raised_an_interrupt_pauses_a_run_that_then_ends_normally(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    root, tool = uuid4(), uuid4()
    lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
    lc.on_tool_start({"name": "ask_human"}, "q", run_id=tool, parent_run_id=root)
    lc.on_tool_error(GraphInterrupt(()), run_id=tool, parent_run_id=root)
    lc.on_chain_end(_blank(), run_id=root)  # LangGraph returns normally on an interrupt
    run = _attributes(_run_span(telemetry))
    assert run[semconv.RUN_STOP_REASON] == semconv.STOP_REASON_INTERRUPTED
    assert _bails(telemetry) == 0
    (tool_span,) = [s for s in telemetry.spans() if s.name == "execute_tool ask_human"]
    assert semconv.ERROR_TYPE not in _attributes(tool_span)  # a pause is no error


def test_the_same_blank_ending_without_the_interrupt_is_a_bail(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    root, tool = uuid4(), uuid4()
    lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
    lc.on_tool_start({"name": "ask_human"}, "q", run_id=tool, parent_run_id=root)
    lc.on_tool_end("fine", run_id=tool, parent_run_id=root)
    lc.on_chain_end(_blank(), run_id=root)
    assert _attributes(_run_span(telemetry)).get(semconv.RUN_STOP_REASON) != (
        semconv.STOP_REASON_INTERRUPTED
    )
    assert _bails(telemetry) == 1


def test_a_sub_agent_paused_by_an_interrupt_pauses_its_parent_run(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    root = uuid4()
    lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
    sub, node = start_sub_agent(lc, root, "helper")
    lc.on_chain_end({}, run_id=node, parent_run_id=sub)
    lc.on_chain_error(GraphInterrupt(()), run_id=sub, parent_run_id=root)
    lc.on_chain_end(_blank(), run_id=root)
    helper = _attributes(_run_span(telemetry, "invoke_agent helper"))
    assert helper[semconv.RUN_STOP_REASON] == semconv.STOP_REASON_INTERRUPTED
    run = _attributes(_run_span(telemetry))
    assert run[semconv.RUN_STOP_REASON] == semconv.STOP_REASON_INTERRUPTED
    assert _bails(telemetry) == 0


def test_a_sub_agent_starts_when_its_graph_started_under_its_parent_run(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    root = uuid4()
    lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
    sub = uuid4()
    lc.on_chain_start(
        {}, {"messages": []}, run_id=sub, parent_run_id=root, metadata=GRAPH, name="helper"
    )
    tool = uuid4()  # time passes between the graph's start and its first node's
    lc.on_tool_start({"name": "warmup"}, "x", run_id=tool, parent_run_id=root)
    lc.on_tool_end("ok", run_id=tool, parent_run_id=root)
    node = start_first_node(lc, sub)
    lc.on_chain_end({}, run_id=node, parent_run_id=sub)
    lc.on_chain_end({"messages": [AIMessage(content="42")]}, run_id=sub, parent_run_id=root)
    lc.on_chain_end({"messages": [AIMessage(content="42")]}, run_id=root)
    helper = _run_span(telemetry, "invoke_agent helper")
    warmup = _run_span(telemetry, "execute_tool warmup")
    parent = _run_span(telemetry)
    assert helper.start_time is not None and warmup.start_time is not None
    assert helper.start_time <= warmup.start_time  # stamped at the graph's start, not later
    assert helper.parent is not None and parent.context is not None
    assert helper.parent.span_id == parent.context.span_id
    assert helper.context.trace_id == parent.context.trace_id
    assert _attributes(helper)[semconv.RUN_PARENT_ID] == _attributes(parent)[semconv.RUN_ID]


def _breakpoint(run: UUID) -> Any:
    from langgraph.callbacks import GraphInterruptEvent

    return GraphInterruptEvent(
        run_id=run, status="interrupt", checkpoint_id="c1", checkpoint_ns=(), interrupts=()
    )


def test_a_run_stopped_at_a_breakpoint_on_a_turn_still_calling_tools_is_paused(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    # interrupt_before=["tools"]: the final state ends on a turn with text and a tool call.
    root = uuid4()
    lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
    lc.on_interrupt(_breakpoint(root))
    turn = AIMessage(
        content="Let me add them.",
        tool_calls=[{"name": "add", "args": {"a": 1}, "id": "c1", "type": "tool_call"}],
    )
    lc.on_chain_end({"messages": [turn]}, run_id=root)
    run = _attributes(_run_span(telemetry))
    assert run[semconv.RUN_STOP_REASON] == semconv.STOP_REASON_INTERRUPTED
    assert _bails(telemetry) == 0


def test_a_run_stopped_after_its_answer_at_a_breakpoint_is_answered(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    # interrupt_after on the node that gave the final answer: the run is done, not paused.
    root = uuid4()
    lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
    lc.on_interrupt(_breakpoint(root))
    lc.on_chain_end({"messages": [AIMessage(content="It is 3.")]}, run_id=root)
    run = _attributes(_run_span(telemetry))
    assert run.get(semconv.RUN_STOP_REASON) != semconv.STOP_REASON_INTERRUPTED
    assert run[semconv.RUN_OUTCOME] == "completed"
