"""The scrape's exemplar index keeps the series of every scope: two meters (two instrumented
libraries) recording a histogram of one name make one Prometheus family whose series differ by
``otel_scope_name``, and each series keeps the exemplar of its own span."""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import set_span_in_context

from symfonic_otel.emit.exemplars import exemplar_index


def test_a_histogram_name_in_two_scopes_keeps_each_scopes_exemplar() -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    tracer = TracerProvider().get_tracer("t")
    spans: dict[str, int] = {}
    try:
        for scope in ("library_a", "library_b"):
            histogram = meters.get_meter(scope).create_histogram("work.duration", unit="s")
            with tracer.start_as_current_span(scope) as span:
                histogram.record(0.3, context=set_span_in_context(span))
            spans[scope] = span.get_span_context().span_id
        index = exemplar_index(reader.get_metrics_data())
    finally:
        meters.shutdown()
    series = index["work_duration_seconds"]
    by_scope = {
        dict(key)["otel_scope_name"]: [e.labels["span_id"] for e in buckets.values()]
        for key, buckets in series.items()
    }
    assert by_scope == {scope: [f"{span_id:016x}"] for scope, span_id in spans.items()}
