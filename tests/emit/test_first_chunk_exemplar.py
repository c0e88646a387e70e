"""A model call's time to first chunk links to the call's span as its exemplar, as its duration
and token usage do: the three histograms of one call name one trace."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.testing.telemetry import InMemoryTelemetry

LINK = (0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331)


def test_every_histogram_of_a_call_names_the_call_s_span(telemetry: InMemoryTelemetry) -> None:
    meter = telemetry.meter_provider.get_meter("test")
    emitter = MetricEmitter(meter, "planner", meter_provider=telemetry.meter_provider)
    emitter.model_call(
        "acme", "gpt-4o", "react", "openai", None, 1.5, (10, 4), None, False, None,
        ttfc_s=0.25, link=LINK,
    )  # fmt: skip
    collected = telemetry.metrics()  # one collection: the SDK hands each exemplar out once
    for spec in (
        semconv.CLIENT_OPERATION_DURATION,
        semconv.CLIENT_TIME_TO_FIRST_CHUNK,
        semconv.CLIENT_TOKEN_USAGE,
    ):
        points = list(collected[spec.name].data.data_points)
        assert points, spec.name
        for point in points:
            linked = {(e.trace_id, e.span_id) for e in point.exemplars}  # type: ignore[attr-defined]
            assert linked == {LINK}, spec.name
