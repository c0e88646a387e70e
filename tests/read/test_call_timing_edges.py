"""A model call's times at their edges, on the real core handler and OTel SDK.

An instant call (its end equal to its start) is a real call, kept as given; the oldest time
the range admits is kept and one nanosecond before it is not; a start stamp in range whose
duration carries its end past the range is malformed, and the span then ends at receipt.
"""

from __future__ import annotations

import time

import pytest

from symfonic_otel import semconv
from symfonic_otel.events import LLMEndEvent
from symfonic_otel.read.sanitise import MAX_TIME_NS, MIN_TIME_NS
from symfonic_otel.testing.telemetry import InMemoryTelemetry

MALFORMED = {semconv.TELEMETRY_DROP_REASON: "malformed"}


def _event(**fields: object) -> LLMEndEvent:
    return LLMEndEvent(model="m-1", output="", usage={}, **fields)  # type: ignore[arg-type]


def test_an_instant_call_keeps_its_explicit_times(telemetry: InMemoryTelemetry) -> None:
    at = time.time_ns() - 1_000_000_000
    telemetry.handler().llm_end(_event(), start_time_ns=at, end_time_ns=at)
    span = telemetry.span("chat m-1")
    assert (span.start_time, span.end_time) == (at, at)
    assert telemetry.value(semconv.DROPPED_EVENTS.name, MALFORMED) == 0


@pytest.mark.parametrize(("start_ns", "kept"), [(MIN_TIME_NS, True), (MIN_TIME_NS - 1, False)])
def test_explicit_call_times_at_the_lower_bound_are_kept_one_before_is_malformed(
    telemetry: InMemoryTelemetry, start_ns: int, kept: bool
) -> None:
    telemetry.handler().llm_end(_event(), start_time_ns=start_ns, end_time_ns=MIN_TIME_NS + 1000)
    assert (telemetry.span("chat m-1").start_time == start_ns) is kept
    assert telemetry.value(semconv.DROPPED_EVENTS.name, MALFORMED) == (0 if kept else 1)


def test_a_stamp_whose_duration_ends_past_the_range_ends_at_receipt_and_is_malformed(
    telemetry: InMemoryTelemetry,
) -> None:
    # One second before the range ends, lasting two: the start is encodable, the end is not.
    stamp = "2261-12-31T23:59:59+00:00"
    event = _event(started_at_utc=stamp, duration_ms=2000.0)
    before = time.time_ns()
    telemetry.handler().llm_end(event)
    span = telemetry.span("chat m-1")
    assert span.end_time is not None and before <= span.end_time <= time.time_ns()
    assert span.end_time < MAX_TIME_NS
    assert telemetry.value(semconv.DROPPED_EVENTS.name, MALFORMED) == 1
