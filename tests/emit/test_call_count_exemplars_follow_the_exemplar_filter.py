"""The run call-count histograms keep a run's trace as exemplar, unless the meter provider's
exemplar filter turns exemplars off: then none is exported."""

from __future__ import annotations

from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader

from symfonic_otel import semconv
from symfonic_otel.emit.metrics import MetricEmitter

CALLS = semconv.INVOKE_AGENT_INFERENCE_CALLS.name
RUN_SPAN = (0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0, 0x0FED_CBA9_8765_4321)


def _call_counts(provider: MeterProvider, reader: InMemoryMetricReader) -> HistogramDataPoint:
    meter = provider.get_meter("test")
    emitter = MetricEmitter(meter, "planner", meter_provider=provider)
    emitter.loops.run_calls("acme", "completed", 3, None, RUN_SPAN)
    data = reader.get_metrics_data()
    assert data is not None
    (point,) = [
        point
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == CALLS
        for point in metric.data.data_points
    ]
    assert isinstance(point, HistogramDataPoint)
    return point


def test_the_run_s_trace_is_the_call_counts_exemplar() -> None:
    reader = InMemoryMetricReader()
    point = _call_counts(MeterProvider(metric_readers=[reader]), reader)
    assert [exemplar.span_id for exemplar in point.exemplars] == [RUN_SPAN[1]]


def test_an_always_off_exemplar_filter_exports_no_call_count_exemplar() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], exemplar_filter=AlwaysOffExemplarFilter())
    point = _call_counts(provider, reader)
    assert point.sum == 3
    assert point.exemplars == []
