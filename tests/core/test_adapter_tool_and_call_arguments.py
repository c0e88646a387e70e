"""Each argument of an adapter's ``start_tool`` / ``end_tool`` / ``start_call`` / ``end_call``
reaches what it names: the run id on a tool span, an error type on a generic call, a tool
started in the future never measures a negative time, and an adapter's identical tool calls
make its run loop like Symfonic's own tool events do."""

from __future__ import annotations

import time

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.loop_support import looping
from tests.support.recorded import span_attrs


def test_a_tool_of_a_run_carries_the_run_id(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r1"))
    handler.end_tool(handler.start_tool("r1", "lookup", call_id="c1"))
    handler.agent_end(AgentEndEvent("r1", "answer", 10.0, 1))
    assert span_attrs(telemetry.span("execute_tool lookup"))[semconv.RUN_ID] == "r1"


def test_an_error_type_given_at_the_end_of_a_generic_call_marks_its_span(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r1"))
    failed = handler.start_call("retrieval", "retrieval docs", run_id="r1")
    handler.end_call(failed, error_type="TimeoutError")
    fine = handler.start_call("retrieval", "retrieval more", run_id="r1")
    handler.end_call(fine)
    handler.agent_end(AgentEndEvent("r1", "answer", 10.0, 1))
    assert span_attrs(telemetry.span("retrieval docs"))[semconv.ERROR_TYPE] == "TimeoutError"
    assert semconv.ERROR_TYPE not in span_attrs(telemetry.span("retrieval more"))


def test_a_tool_started_in_the_future_ends_at_its_start_not_before_it(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r1"))
    future = time.time_ns() + 5_000_000_000
    handler.end_tool(handler.start_tool("r1", "lookup", start_time_ns=future))
    handler.agent_end(AgentEndEvent("r1", "answer", 10.0, 1))
    span = telemetry.span("execute_tool lookup")
    assert span.start_time == future and span.end_time == future
    [(_, point)] = telemetry.points(semconv.EXECUTE_TOOL_DURATION.name)
    assert point.sum == 0.0  # type: ignore[union-attr]
    assert point.min == 0.0  # type: ignore[union-attr]


def test_an_adapter_s_identical_tool_calls_make_its_run_loop(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(loop_threshold=3)
    handler.agent_start(AgentStartEvent("q", "r1"))
    for index in range(3):
        tool = handler.start_tool("r1", "search", call_id=f"c{index}", arguments={"q": "same"})
        handler.end_tool(tool)
    handler.agent_end(AgentEndEvent("r1", "answer", 10.0, 1))
    assert looping(telemetry, semconv.LOOP_REPEATED_TOOL_CALL) == 1
