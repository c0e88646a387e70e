"""A call histogram bucket's exemplar is the latest run that landed in it, as the SDK's aligned
bucket reservoir keeps it: a later run in the same bucket replaces the earlier one, for a
cumulative reader and a delta reader alike, and each bucket keeps its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    HistogramDataPoint,
    InMemoryMetricReader,
)

from symfonic_otel import semconv
from symfonic_otel.emit import tenant_hub
from symfonic_otel.emit.budget import cardinality_view
from symfonic_otel.emit.call_histograms import BOUNDS, CallHistograms

RUN = {"gen_ai.agent.name": "planner", "symfonic.run.outcome": "completed"}
FIRST = (0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331)
LATER = (0x5B8EFFF798038103D269B633813FC60C, 0xEEE19B7EC3C1B174)
OTHER = (0x1F2E3D4C5B6A79880123456789ABCDEF, 0x00F067AA0BA902B7)


@pytest.fixture(params=["cumulative", "delta"])
def reader_and_histograms(
    request: pytest.FixtureRequest,
) -> Iterator[tuple[InMemoryMetricReader, CallHistograms]]:
    delta: dict[type, AggregationTemporality] = (
        {Histogram: AggregationTemporality.DELTA} if request.param == "delta" else {}
    )
    reader = InMemoryMetricReader(preferred_temporality=delta)
    provider = MeterProvider(metric_readers=[reader], views=[cardinality_view()])
    histograms = tenant_hub.hub_for(provider).call_histograms
    assert histograms is not None
    yield reader, histograms
    provider.shutdown()


def _points(reader: InMemoryMetricReader) -> dict[str, HistogramDataPoint]:
    """One collection's point of each call histogram (a single attribute set each)."""
    data = reader.get_metrics_data()
    assert data is not None
    found: dict[str, HistogramDataPoint] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    if isinstance(point, HistogramDataPoint) and metric.name not in found:
                        found[metric.name] = point
    return found


def _bucket(value: float) -> int:
    return sum(1 for bound in BOUNDS if bound < value)


def test_a_later_run_in_the_same_bucket_replaces_the_exemplar(
    reader_and_histograms: tuple[InMemoryMetricReader, CallHistograms],
) -> None:
    reader, histograms = reader_and_histograms
    histograms.record(RUN, 3, 3, link=FIRST)
    histograms.record(RUN, 3, 3, link=LATER)
    points = _points(reader)
    for spec in (semconv.INVOKE_AGENT_INFERENCE_CALLS, semconv.INVOKE_AGENT_TOOL_CALLS):
        point = points[spec.name]
        assert point.count == 2
        assert [(e.trace_id, e.span_id) for e in point.exemplars] == [LATER], spec.name


def test_each_bucket_keeps_its_own_latest_run(
    reader_and_histograms: tuple[InMemoryMetricReader, CallHistograms],
) -> None:
    reader, histograms = reader_and_histograms
    low, high = 1, 200
    assert _bucket(low) != _bucket(high)
    histograms.record(RUN, low, None, link=FIRST)
    histograms.record(RUN, high, None, link=OTHER)
    histograms.record(RUN, low, None, link=LATER)
    point = _points(reader)[semconv.INVOKE_AGENT_INFERENCE_CALLS.name]
    by_value = {e.value: (e.trace_id, e.span_id) for e in point.exemplars}
    assert by_value == {low: LATER, high: OTHER}
