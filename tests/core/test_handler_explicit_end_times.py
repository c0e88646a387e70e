"""The handler passes an adapter's explicit end times through, and bounds runs by their TTL.

An adapter that knows when a run or a call ended says so in nanoseconds; the span must end then,
not when the handler heard of it. A run may legitimately last longer than a model call, up to
the run TTL (given in seconds): its reported duration is kept up to that bound.
"""

from __future__ import annotations

import time

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

MALFORMED = {semconv.TELEMETRY_DROP_REASON: "malformed"}


def test_a_run_ends_at_the_explicit_end_time(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    start = time.time_ns() - 3_000_000_000
    end = start + 1_000_000_000
    handler.agent_start(AgentStartEvent(query="q", run_id="r1"), start_time_ns=start)
    handler.agent_end(AgentEndEvent("r1", "a", 1000.0, 1), end_time_ns=end)
    span = telemetry.span("invoke_agent symfonic")
    assert (span.start_time, span.end_time) == (start, end)


def test_a_call_span_ends_at_the_explicit_end_time(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    start = time.time_ns() - 3_000_000_000
    end = start + 40_000_000
    span = handler.start_call("retrieval", "retrieval docs", start_time_ns=start)
    handler.end_call(span, end_time_ns=end)
    ended = telemetry.span("retrieval docs")
    assert (ended.start_time, ended.end_time) == (start, end)


def test_a_run_longer_than_a_day_is_kept_within_a_ttl_given_in_seconds(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(run_ttl_s=2 * 86_400.0)
    handler.agent_start(AgentStartEvent(query="q", run_id="r1"))
    day_and_a_half_ms = 1.5 * 86_400_000.0
    handler.agent_end(AgentEndEvent("r1", "a", day_and_a_half_ms, 1))
    [(_, point)] = telemetry.points(semconv.AGENT_DURATION.name)
    assert isinstance(point, HistogramDataPoint)
    assert float(point.sum) == pytest.approx(1.5 * 86_400.0)
    assert telemetry.value(semconv.DROPPED_EVENTS.name, MALFORMED) == 0
