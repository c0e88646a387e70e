"""Reading what in-memory telemetry recorded, the way several test modules assert on it."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from symfonic_otel.testing.telemetry import InMemoryTelemetry


def span_attrs(span: Any) -> dict[str, Any]:
    """A span's attributes as a plain dict (empty when it has none)."""
    return dict(span.attributes or {})


def internal_errors(telemetry: InMemoryTelemetry) -> float:
    """Events the handler dropped because its own code failed (it never raises into the agent)."""
    return telemetry.value(
        "symfonic.telemetry.dropped_events", {"symfonic.telemetry.drop_reason": "internal_error"}
    )


def recorded_text(telemetry: InMemoryTelemetry) -> str:
    """Every attribute value of every span and span event, as one text (for privacy checks)."""
    values: list[str] = []
    for span in telemetry.spans():
        values.extend(str(v) for v in span_attrs(span).values())
        for event in span.events:
            values.extend(str(v) for v in (event.attributes or {}).values())
    return "\n".join(values)


def reader_points(reader: InMemoryMetricReader, name: str | None = None) -> list[Any]:
    """The data points of one collection of ``reader``: every metric's, or those of ``name``."""
    data = reader.get_metrics_data()
    assert data is not None
    return [
        point
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if name is None or metric.name == name
        for point in metric.data.data_points
    ]
