"""A failed streamed call's time to first chunk lands on the series of a successful call of the
same model (the histogram has no error.type), and a per-tenant handler puts its calls'
durations on the tenant's own series."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.testing.telemetry import InMemoryTelemetry

TTFC = semconv.CLIENT_TIME_TO_FIRST_CHUNK.name
DURATION = semconv.CLIENT_OPERATION_DURATION.name


def _emitter(telemetry: InMemoryTelemetry, **kwargs: bool) -> MetricEmitter:
    meter = telemetry.meter_provider.get_meter("test")
    return MetricEmitter(meter, "planner", meter_provider=telemetry.meter_provider, **kwargs)


def _call(emitter: MetricEmitter, error: str | None, ttfc_s: float | None = None) -> None:
    emitter.model_call(
        "acme", "gpt-4o", "react", None, error, 1.5, (None, None), None, False, None,
        ttfc_s=ttfc_s,
    )  # fmt: skip


def test_a_failed_call_s_first_chunk_is_on_the_success_series(
    telemetry: InMemoryTelemetry,
) -> None:
    emitter = _emitter(telemetry)
    _call(emitter, "TimeoutError", ttfc_s=0.25)
    ((attributes, point),) = telemetry.points(TTFC)
    assert attributes == {
        semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
        semconv.GEN_AI_REQUEST_MODEL: "gpt-4o",
        semconv.NODE_NAME: "react",
    }
    assert point.count == 1  # type: ignore[union-attr]


def test_per_tenant_durations_name_the_call_s_tenant(telemetry: InMemoryTelemetry) -> None:
    emitter = _emitter(telemetry, tenant_histograms=True)
    _call(emitter, None)
    _call(emitter, "TimeoutError")
    tenants = {attributes.get(semconv.TENANT_ID) for attributes, _ in telemetry.points(DURATION)}
    assert tenants == {"acme"}
