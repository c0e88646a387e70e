"""The demo's figures over real OTel SDK metrics: merged histograms, filtered totals and the
Prometheus-style quantile at a bucket's edge."""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from symfonic_otel.demo.metric_view import MetricView, histogram_quantile


def _view() -> MetricView:
    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("test")
    latency = meter.create_histogram("latency")
    latency.record(0.5, {"tenant": "acme"})
    latency.record(2.5, {"tenant": "acme"})
    latency.record(4.0, {"tenant": "globex"})
    runs = meter.create_counter("runs")
    runs.add(3, {"tenant": "acme", "outcome": "completed"})
    runs.add(5, {"tenant": "acme", "outcome": "error"})
    runs.add(7, {"tenant": "globex", "outcome": "completed"})
    return MetricView(reader.get_metrics_data())


def test_histograms_of_several_series_merge_their_counts_and_sums() -> None:
    merged = _view().histograms("latency", by=())
    (whole,) = merged.values()
    assert whole.count == 3
    assert whole.total == 7.0
    assert sum(whole.counts) == 3
    per_tenant = _view().histograms("latency", by=("tenant",))
    assert per_tenant[("acme",)].count == 2 and per_tenant[("globex",)].count == 1


def test_a_total_keeps_only_the_points_matching_every_condition() -> None:
    view = _view()
    assert view.total("runs", {"tenant": "acme", "outcome": "completed"}) == 3
    assert view.total("runs", {"outcome": "completed"}) == 10
    assert view.total("runs") == 15
    assert view.total("latency", {"tenant": "acme"}) == 2  # a histogram's observations


def test_a_quantile_on_a_buckets_upper_edge_stays_in_that_bucket() -> None:
    """As Prometheus: the rank reached exactly at a bucket's end is that bucket's bound, not
    the next non-empty bucket's."""
    assert histogram_quantile(0.5, [1.0, 2.0], [2, 0, 2]) == 1.0
    assert histogram_quantile(0.5, [1.0, 2.0], [1, 1, 0]) == 1.0
    assert histogram_quantile(0.75, [1.0, 2.0], [2, 2, 0]) == 1.5
