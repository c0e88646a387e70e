"""``agent_start(start_time_ns=...)``: a usable value starts the run span there; one no exporter
can hold still opens the run, at its receipt, and is counted as a malformed start."""

from __future__ import annotations

import time

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

MALFORMED_START = {
    semconv.TELEMETRY_EVENT: "agent_start",
    semconv.TELEMETRY_DROP_REASON: "malformed",
}


def test_an_explicit_start_time_starts_the_run_span_uncounted(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    start = time.time_ns() - 3_000_000_000
    handler.agent_start(AgentStartEvent("q", "r1"), start_time_ns=start)
    handler.agent_end(AgentEndEvent("r1", "answer", 10.0, 1))
    assert telemetry.span(semconv.agent_span_name("symfonic")).start_time == start
    assert telemetry.value(semconv.DROPPED_EVENTS.name) == 0


def test_an_unencodable_start_time_opens_the_run_now_and_is_counted_malformed(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    before = time.time_ns()
    handler.agent_start(AgentStartEvent("q", "r1"), start_time_ns=2**70)
    assert handler.is_open("r1")
    handler.agent_end(AgentEndEvent("r1", "answer", 10.0, 1))
    span = telemetry.span(semconv.agent_span_name("symfonic"))
    assert span.start_time is not None and before <= span.start_time <= time.time_ns()
    assert telemetry.value(semconv.DROPPED_EVENTS.name, MALFORMED_START) == 1
