"""Reading loop telemetry back: looping runs and repeated tool calls per tenant, the run span's
``symfonic.agent.loop_detected`` event, and a check that no argument text left the process."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from symfonic_otel import semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def looping(telemetry: InMemoryTelemetry, kind: str | None = None, **where: Any) -> float:
    """Looping runs counted so far (optionally of one kind, with matching attributes)."""
    match = {key.replace("__", "."): value for key, value in where.items()}
    if kind is not None:
        match[semconv.LOOP_KIND] = kind
    return telemetry.value(semconv.LOOPING_RUNS.name, match)


def repeated(telemetry: InMemoryTelemetry, **where: Any) -> float:
    match = {key.replace("__", "."): value for key, value in where.items()}
    return telemetry.value(semconv.REPEATED_TOOL_CALLS.name, match)


def run_spans(telemetry: InMemoryTelemetry) -> list[ReadableSpan]:
    return [
        span
        for span in telemetry.spans()
        if (span.attributes or {}).get(semconv.GEN_AI_OPERATION_NAME) == semconv.OP_INVOKE_AGENT
    ]


def loop_events(span: ReadableSpan) -> list[dict[str, Any]]:
    return [
        dict(event.attributes or {})
        for event in span.events
        if event.name == semconv.EVENT_LOOP_DETECTED
    ]


def all_loop_events(telemetry: InMemoryTelemetry) -> list[dict[str, Any]]:
    return [event for span in run_spans(telemetry) for event in loop_events(span)]


def assert_no_text(telemetry: InMemoryTelemetry, secret: str) -> None:
    """``secret`` (an argument's text) is in no span attribute, event or metric label."""
    for span in telemetry.spans():
        assert secret not in repr(dict(span.attributes or {})), span.name
        for event in span.events:
            assert secret not in repr(dict(event.attributes or {})), (span.name, event.name)
    for name, metric in telemetry.metrics().items():
        for point in metric.data.data_points:
            assert secret not in repr(dict(point.attributes or {})), name
