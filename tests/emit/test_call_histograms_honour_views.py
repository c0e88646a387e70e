"""The run call-count histograms honour the meter provider's views: one that renames them is
applied (the package does not serve them itself past such a view)."""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.metrics.view import View
from opentelemetry.sdk.trace import TracerProvider

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.handler import OTelCallbackHandler

CALLS = semconv.INVOKE_AGENT_INFERENCE_CALLS.name


def _run(provider: MeterProvider) -> None:
    handler = OTelCallbackHandler(tracer_provider=TracerProvider(), meter_provider=provider)
    handler.agent_start(AgentStartEvent("q", "r"))
    handler.llm_end(LLMEndEvent("gpt-4o", "x", {}, run_id="r"))
    handler.agent_end(AgentEndEvent("r", "an answer", 10.0, 1))


def _points(
    reader: InMemoryMetricReader,
) -> dict[str, list[HistogramDataPoint]]:
    data = reader.get_metrics_data()
    assert data is not None
    return {
        metric.name: list(metric.data.data_points)  # type: ignore[misc]
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }


def test_a_view_renaming_the_call_counts_is_applied() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(
        metric_readers=[reader], views=[View(instrument_name=CALLS, name="app.model_calls")]
    )
    _run(provider)
    points = _points(reader)
    assert CALLS not in points
    assert [point.sum for point in points["app.model_calls"]] == [1]
