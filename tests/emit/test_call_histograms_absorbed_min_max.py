"""Values an early handler put in the SDK's call histogram and the in-process ones, summed into
one point per set: its min is the smaller of the two minima and its max the larger of the two
maxima, whichever side holds them, as one SDK histogram fed every value gives."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader

from symfonic_otel import semconv
from symfonic_otel.emit import tenant_hub
from tests.support.recorded import reader_points

CALLS = semconv.INVOKE_AGENT_INFERENCE_CALLS
RUN = {"gen_ai.agent.name": "planner"}
BUCKETS = list(CALLS.buckets or ())


def _point(reader: InMemoryMetricReader) -> HistogramDataPoint:
    [point] = reader_points(reader, CALLS.name)
    assert isinstance(point, HistogramDataPoint)
    return point


@pytest.mark.parametrize(
    ("in_sdk", "in_process"),
    [((5, 300), (1, 7)), ((1, 7), (5, 300)), ((2, 500), (40, 60))],
    ids=["min-in-process", "max-in-process", "both-in-sdk"],
)
def test_the_summed_point_spans_both_sides_extremes(
    in_sdk: tuple[int, ...], in_process: tuple[int, ...]
) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    reference_reader = InMemoryMetricReader()
    reference = MeterProvider(metric_readers=[reference_reader])
    try:
        histograms = tenant_hub.hub_for(provider).call_histograms
        assert histograms is not None
        meter = provider.get_meter(semconv.SCOPE_NAME)
        early = meter.create_histogram(
            CALLS.name, CALLS.unit, CALLS.description, explicit_bucket_boundaries_advisory=BUCKETS
        )
        sdk = reference.get_meter("reference").create_histogram(
            CALLS.name, explicit_bucket_boundaries_advisory=BUCKETS
        )
        for value in in_sdk:
            early.record(value, RUN)
            sdk.record(value, RUN)
        for value in in_process:
            histograms.record(RUN, value, None)
            sdk.record(value, RUN)
        summed, expected = _point(reader), _point(reference_reader)
    finally:
        provider.shutdown()
        reference.shutdown()
    assert (summed.min, summed.max) == (expected.min, expected.max)
    assert (summed.min, summed.max) == (min(*in_sdk, *in_process), max(*in_sdk, *in_process))
    assert (summed.count, summed.sum) == (expected.count, expected.sum)
    assert tuple(summed.bucket_counts) == tuple(expected.bucket_counts)
