"""Where the run's two call histograms come from: a view that renames, describes or filters one,
or a reader asking for another aggregation, keeps them SDK instruments (the view or the reader's
choice then shows); and the provider's exemplar filter holds for them wherever they are served."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import (
    AlwaysOffExemplarFilter,
    AlwaysOnExemplarFilter,
    Histogram,
    MeterProvider,
)
from opentelemetry.sdk.metrics.export import (
    ExponentialHistogram,
    InMemoryMetricReader,
    Metric,
)
from opentelemetry.sdk.metrics.view import (
    ExplicitBucketHistogramAggregation,
    ExponentialBucketHistogramAggregation,
    View,
)
from opentelemetry.sdk.trace import TracerProvider

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.emit import tenant_hub
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent

CALLS = semconv.INVOKE_AGENT_INFERENCE_CALLS.name


def _run(provider: MeterProvider) -> None:
    handler = OTelCallbackHandler(meter_provider=provider, tracer_provider=TracerProvider())
    handler.agent_start(AgentStartEvent("q", "r1"))
    handler.llm_end(LLMEndEvent("gpt-4o", "x", {}, run_id="r1", node_name="react"))
    handler.agent_end(AgentEndEvent("r1", "an answer", 10.0, 1))


def _metrics(reader: InMemoryMetricReader) -> dict[str, Metric]:
    data = reader.get_metrics_data()
    assert data is not None
    return {
        metric.name: metric
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }


@pytest.mark.parametrize(
    ("change", "name", "shown"),
    [
        ({"name": "calls.renamed"}, "calls.renamed", lambda m: m.description),
        ({"description": "my calls"}, CALLS, lambda m: m.description == "my calls"),
        (
            {"attribute_keys": {semconv.GEN_AI_AGENT_NAME}},
            CALLS,
            lambda m: (
                [dict(p.attributes) for p in m.data.data_points]
                == [{semconv.GEN_AI_AGENT_NAME: "symfonic"}]
            ),
        ),
    ],
    ids=["renamed", "described", "filtered"],
)
def test_a_view_changing_a_call_histogram_is_applied_to_it(
    change: dict[str, Any], name: str, shown: Any
) -> None:
    reader = InMemoryMetricReader()
    view = View(instrument_name=CALLS, **change)
    provider = MeterProvider(metric_readers=[reader], views=[view])
    _run(provider)
    metrics = _metrics(reader)
    assert metrics[name].data.data_points[0].count == 1  # type: ignore[union-attr]
    assert shown(metrics[name])
    provider.shutdown()


def test_a_reader_asking_exponential_histograms_gets_the_call_counts_so() -> None:
    reader = InMemoryMetricReader(
        preferred_aggregation={Histogram: ExponentialBucketHistogramAggregation()}
    )
    provider = MeterProvider(metric_readers=[reader])
    _run(provider)
    calls = _metrics(reader)[CALLS]
    assert isinstance(calls.data, ExponentialHistogram)
    assert calls.data.data_points[0].count == 1
    provider.shutdown()


@pytest.mark.parametrize(
    ("aggregation", "in_process"),
    [
        (ExplicitBucketHistogramAggregation(), True),  # the OTLP exporter's choice
        (ExplicitBucketHistogramAggregation((1, 10)), False),
        (ExplicitBucketHistogramAggregation(record_min_max=False), False),
    ],
    ids=["advised-buckets", "own-buckets", "no-min-max"],
)
def test_a_reader_asking_explicit_buckets_is_served_in_process_only_at_the_advised_ones(
    aggregation: ExplicitBucketHistogramAggregation, in_process: bool
) -> None:
    reader = InMemoryMetricReader(preferred_aggregation={Histogram: aggregation})
    provider = MeterProvider(metric_readers=[reader])
    _run(provider)
    assert (tenant_hub.hub_for(provider).call_histograms is not None) is in_process
    (point,) = _metrics(reader)[CALLS].data.data_points  # type: ignore[union-attr]
    assert point.count == 1
    provider.shutdown()


@pytest.mark.parametrize(
    ("exemplar_filter", "exemplars"),
    [(AlwaysOnExemplarFilter(), 1), (AlwaysOffExemplarFilter(), 0)],
    ids=["always-on", "always-off"],
)
def test_the_provider_s_exemplar_filter_holds_for_the_call_histograms(
    exemplar_filter: Any, exemplars: int
) -> None:
    """A run's span links its counts (a looping run's) unless the filter keeps no exemplar."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], exemplar_filter=exemplar_filter)
    emitter = MetricEmitter(provider.get_meter("t"), "ops", meter_provider=provider)
    emitter.loops.run_calls("acme", "completed", 4, 7, (0xABC, 0xDEF))
    metrics = _metrics(reader)
    for name in (CALLS, semconv.INVOKE_AGENT_TOOL_CALLS.name):
        (point,) = metrics[name].data.data_points  # type: ignore[union-attr]
        assert len(point.exemplars) == exemplars
    provider.shutdown()
