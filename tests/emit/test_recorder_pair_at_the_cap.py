"""A pair of values queued onto a full queue applies as many of the oldest as it takes to stay
within the cap (two, not one): the queue never grows past its cap, however many pairs arrive
with no collection, and nothing is lost."""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader

from symfonic_otel.emit.recorder import DeferredRecorder


def test_pairs_onto_a_full_queue_keep_it_at_its_cap() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    meter = provider.get_meter("test")
    first, second = meter.create_histogram("first"), meter.create_histogram("second")
    recorder = DeferredRecorder(cap=3)
    try:
        for value in range(3):
            recorder.record(first, float(value), {})
        assert recorder.pending == 3
        for value in range(10):
            recorder.record_pair(first, 10.0 + value, second, 20.0 + value, {})
            assert recorder.pending == 3
        assert recorder.drain() == 3
        data = reader.get_metrics_data()
    finally:
        provider.shutdown()
    assert data is not None
    counts = {
        metric.name: (point.count, point.sum)
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        for point in metric.data.data_points
        if isinstance(point, HistogramDataPoint)
    }
    assert counts == {"first": (13, 0 + 1 + 2 + 145), "second": (10, 245)}
