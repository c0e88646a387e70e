"""Token usage series are cached per label combination, provider and error included: two providers
serving one model (``openai`` and ``azure.ai.openai``) get a series each, and neither keeps the
other's provider label; a failed call's tokens keep its error type."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def test_one_model_through_two_providers_has_two_token_series(
    telemetry: InMemoryTelemetry,
) -> None:
    meter = telemetry.meter_provider.get_meter("test")
    emitter = MetricEmitter(meter, "planner", meter_provider=telemetry.meter_provider)
    for provider, tokens in (("openai", 10), ("azure.ai.openai", 20), ("openai", 5)):
        emitter.model_call(
            "acme", "gpt-4o", "react", provider, None, 1.0, (tokens, None), None, False, None
        )
    sums = {
        (
            attributes.get(semconv.GEN_AI_PROVIDER_NAME),
            attributes.get(semconv.GEN_AI_TOKEN_TYPE),
        ): point.sum  # type: ignore[union-attr]
        for attributes, point in telemetry.points(semconv.CLIENT_TOKEN_USAGE.name)
    }
    assert sums == {("openai", "input"): 15, ("azure.ai.openai", "input"): 20}
    durations = {
        attributes.get(semconv.GEN_AI_PROVIDER_NAME): point.count  # type: ignore[union-attr]
        for attributes, point in telemetry.points(semconv.CLIENT_OPERATION_DURATION.name)
    }
    assert durations == {"openai": 2, "azure.ai.openai": 1}


def test_a_failed_call_s_tokens_keep_its_error_type(telemetry: InMemoryTelemetry) -> None:
    meter = telemetry.meter_provider.get_meter("test")
    emitter = MetricEmitter(meter, "planner", meter_provider=telemetry.meter_provider)
    for error, tokens in ((None, 10), ("TimeoutError", 20), (None, 5)):
        emitter.model_call(
            "acme", "gpt-4o", "react", "openai", error, 1.0, (None, tokens), None, False, None
        )
    sums = {
        (
            attributes.get(semconv.ERROR_TYPE),
            attributes.get(semconv.GEN_AI_TOKEN_TYPE),
        ): point.sum  # type: ignore[union-attr]
        for attributes, point in telemetry.points(semconv.CLIENT_TOKEN_USAGE.name)
    }
    assert sums == {(None, "output"): 15, ("TimeoutError", "output"): 20}
