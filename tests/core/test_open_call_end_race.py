"""A span an adapter started is ended once, even when two threads end it at once (a framework's
callback and its cleanup racing): the open call is looked up and removed under one lock, so
exactly one end records the tool's duration."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.core.steps import OpenCalls
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.paused_section import PausedBefore


def test_a_tool_span_ended_twice_at_once_records_one_duration(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="q", run_id="r1"), tenant_id="acme")
    span = handler.start_tool("r1", "lookup", call_id="c1")
    with PausedBefore(OpenCalls.pop, "if call is None") as first:
        first.start(handler.end_tool, span)
        handler.end_tool(span)  # waits for the first end, under the lock
        first.finish()
    handler.agent_end(AgentEndEvent("r1", "answer", 10.0, 1))
    assert telemetry.value(semconv.EXECUTE_TOOL_DURATION.name) == 1
    assert len(handler._core.calls) == 0
