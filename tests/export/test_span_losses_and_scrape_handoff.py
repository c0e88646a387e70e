"""Export bookkeeping: lost spans summed over every batch processor; a collection handed over once.

``configure_telemetry`` gives each span exporter its own batch processor (OTLP and console,
say); the ``symfonic.telemetry.dropped_spans`` counter must add all their losses. Real SDK
processors, a real exporter that refuses every batch, a real metric reader.
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from prometheus_client import CollectorRegistry

from symfonic_otel import semconv
from symfonic_otel.emit.exemplars import ExemplarReader
from symfonic_otel.export.exporters import observe_span_losses
from symfonic_otel.export.span_export import DropCountingBatchSpanProcessor


class _Refusing(SpanExporter):
    """A collector that answers every export with a failure."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.FAILURE


def _dropped(reader: InMemoryMetricReader) -> dict[str, int]:
    data = reader.get_metrics_data()
    assert data is not None
    found: dict[str, int] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == semconv.DROPPED_SPANS.name:
                    for point in metric.data.data_points:
                        reason = str(point.attributes[semconv.TELEMETRY_DROP_REASON])
                        found[reason] = int(point.value)
    return found


def test_losses_of_every_processor_are_summed() -> None:
    processors = [
        DropCountingBatchSpanProcessor(_Refusing(), schedule_delay_millis=60_000) for _ in range(3)
    ]
    tracers = []
    for processor in processors:
        provider = TracerProvider()
        provider.add_span_processor(processor)
        tracers.append(provider.get_tracer("app"))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    observe_span_losses(meter_provider, processors)
    try:
        for n, tracer in enumerate(tracers):  # 1, 2 and 3 spans lost
            for _ in range(n + 1):
                tracer.start_span("work").end()
        for processor in processors:
            assert processor.force_flush()
        assert [p.dropped_spans for p in processors] == [1, 2, 3]
        dropped = _dropped(reader)
        assert dropped[semconv.SPAN_DROP_EXPORT_FAILED] == 6
        assert dropped[semconv.SPAN_DROP_QUEUE_FULL] == 0
        assert set(dropped) == {
            semconv.SPAN_DROP_QUEUE_FULL,
            semconv.SPAN_DROP_EXPORT_FAILED,
            semconv.SPAN_DROP_UNENCODABLE,
        }
    finally:
        for processor in processors:
            processor.shutdown()
        meter_provider.shutdown()


def test_the_latest_collection_is_handed_to_one_scrape_only() -> None:
    """Held past its scrape, a collection of thousands of series would outlive it in memory."""
    registry = CollectorRegistry()
    reader = ExemplarReader(registry)
    meter_provider = MeterProvider(metric_readers=[reader])
    try:
        meter_provider.get_meter("app").create_counter("work").add(1)
        assert reader.take_latest() is None  # nothing collected yet
        families = list(registry.collect())  # a collection, as a scrape runs it
        assert "work" in [f.name for f in families]
        latest = reader.take_latest()
        assert latest is not None and latest.resource_metrics
        assert reader.take_latest() is None
    finally:
        meter_provider.shutdown()
