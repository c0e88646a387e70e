"""A model call's times in their units: nanoseconds in, seconds in the histogram, on the real SDK.

The call's span times come from explicit nanoseconds, else ``started_at_utc`` (ISO text or a
``datetime``, naive meaning UTC) plus ``duration_ms``; its latency is recorded in seconds. Each
conversion is checked on a value whose wrong unit is off by a factor of a thousand or more.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint

from symfonic_otel import semconv
from symfonic_otel.events import LLMEndEvent
from symfonic_otel.read.extract_time import call_timing, stamp_ns
from symfonic_otel.read.sanitise import MAX_CALL_MS
from symfonic_otel.testing.telemetry import InMemoryTelemetry

MALFORMED = {semconv.TELEMETRY_DROP_REASON: "malformed"}


def _latency_s(telemetry: InMemoryTelemetry) -> float:
    [(_, point)] = telemetry.points(semconv.CLIENT_OPERATION_DURATION.name)
    assert isinstance(point, HistogramDataPoint)
    return float(point.sum)


def _event(**fields: object) -> LLMEndEvent:
    return LLMEndEvent(model="m-1", output="", usage={}, **fields)  # type: ignore[arg-type]


def test_explicit_nanoseconds_set_the_span_and_a_latency_in_seconds(
    telemetry: InMemoryTelemetry,
) -> None:
    end = time.time_ns() - 1_000_000_000
    start = end - 250_000_000
    telemetry.handler().llm_end(_event(), start_time_ns=start, end_time_ns=end)
    span = telemetry.span("chat m-1")
    assert (span.start_time, span.end_time) == (start, end)
    assert _latency_s(telemetry) == pytest.approx(0.25)


def test_a_start_stamp_and_a_duration_in_milliseconds_set_the_span_and_latency(
    telemetry: InMemoryTelemetry,
) -> None:
    started = datetime.now(UTC) - timedelta(seconds=5)
    event = _event(started_at_utc=started.isoformat(), duration_ms=1500.0)
    telemetry.handler().llm_end(event)
    span = telemetry.span("chat m-1")
    assert span.start_time is not None and span.end_time is not None
    assert span.end_time - span.start_time == 1_500_000_000
    assert abs(span.start_time - int(started.timestamp() * 1e9)) < 1_000
    assert _latency_s(telemetry) == pytest.approx(1.5)
    assert telemetry.value(semconv.DROPPED_EVENTS.name, MALFORMED) == 0


def test_a_duration_without_a_stamp_ends_at_receipt_and_is_not_malformed(
    telemetry: InMemoryTelemetry,
) -> None:
    before = time.time_ns()
    telemetry.handler().llm_end(_event(duration_ms=200.0))
    span = telemetry.span("chat m-1")
    assert span.start_time is not None and span.end_time is not None
    assert span.end_time >= before and span.end_time - span.start_time == 200_000_000
    assert _latency_s(telemetry) == pytest.approx(0.2)
    assert telemetry.value(semconv.DROPPED_EVENTS.name, MALFORMED) == 0


def test_a_bad_stamp_beside_a_good_duration_keeps_the_latency_and_is_counted_malformed(
    telemetry: InMemoryTelemetry,
) -> None:
    telemetry.handler().llm_end(_event(started_at_utc="yesterday-ish", duration_ms=300.0))
    assert _latency_s(telemetry) == pytest.approx(0.3)
    assert telemetry.value(semconv.DROPPED_EVENTS.name, MALFORMED) == 1


def test_a_datetime_stamp_is_read_in_nanoseconds_and_a_naive_one_as_utc(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    aware = datetime(2026, 12, 5, 12, 0, 0, 123456, tzinfo=UTC)
    expected = int(aware.timestamp()) * 1_000_000_000 + 123_456_000
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # a local zone nine hours from UTC
    time.tzset()
    try:
        assert stamp_ns(aware) == expected
        assert stamp_ns(aware.replace(tzinfo=None)) == expected
        assert stamp_ns(aware.isoformat()) == expected
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.parametrize(("over_ns", "kept"), [(0, True), (1, False)], ids=["at", "one_past"])
def test_explicit_times_a_day_apart_are_kept_one_nanosecond_more_is_malformed(
    over_ns: int, kept: bool
) -> None:
    end = time.time_ns()
    start = end - int(MAX_CALL_MS) * 1_000_000 - over_ns
    timing = call_timing(object(), start, end)
    assert timing.malformed is not kept
    assert (timing.start_ns == start) is kept


@pytest.mark.parametrize(("extra_ms", "kept"), [(0.0, True), (1.0, False)], ids=["at", "one_past"])
def test_a_duration_of_one_day_is_kept_one_millisecond_more_is_malformed(
    extra_ms: float, kept: bool
) -> None:
    timing = call_timing(_event(duration_ms=MAX_CALL_MS + extra_ms), None, None)
    assert timing.malformed is not kept
    assert (timing.duration_s is not None) is kept
