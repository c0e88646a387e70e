"""A tenant's detailed sets fold into its ``_OTHER`` model past the cap, but a fold keeps the
set's closed flags: a synthesis fallback that did not recover is still counted as not recovered,
and a call whose price is unknown still as unknown, whichever flag the earlier calls had."""

from __future__ import annotations

import pytest

from symfonic_otel import semconv
from symfonic_otel.emit.budget import TENANT_DETAIL_SETS
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.testing.telemetry import InMemoryTelemetry

OTHER = semconv.OTHER_VALUE


def _emitter(telemetry: InMemoryTelemetry) -> MetricEmitter:
    meter = telemetry.meter_provider.get_meter("test")
    return MetricEmitter(meter, "planner", meter_provider=telemetry.meter_provider)


def _call(emitter: MetricEmitter, model: str, recovered: bool, pricing_unknown: bool) -> None:
    emitter.model_call(
        "acme", model, "synthesize", None, None, None, (None, None), 0.5, pricing_unknown, recovered
    )


@pytest.mark.parametrize("earlier", [True, False], ids=["earlier-true", "earlier-false"])
def test_a_folded_set_keeps_recovered_and_pricing_unknown(
    telemetry: InMemoryTelemetry, earlier: bool
) -> None:
    emitter = _emitter(telemetry)
    for index in range(TENANT_DETAIL_SETS):
        _call(emitter, f"model-{index}", recovered=earlier, pricing_unknown=earlier)
    _call(emitter, "late-a", recovered=True, pricing_unknown=True)
    _call(emitter, "late-b", recovered=False, pricing_unknown=False)
    _call(emitter, "late-c", recovered=False, pricing_unknown=False)

    fallbacks = {
        (attributes[semconv.GEN_AI_REQUEST_MODEL], attributes[semconv.SYNTHESIS_RECOVERED]): value
        for attributes, value in telemetry.points(semconv.SYNTHESIS_FALLBACKS.name)
        if attributes.get(semconv.TENANT_ID) == "acme"
    }
    assert {key: value for key, value in fallbacks.items() if key[0] == OTHER} == {
        (OTHER, True): 1,
        (OTHER, False): 2,
    }
    cost = {
        (attributes[semconv.GEN_AI_REQUEST_MODEL], attributes[semconv.LLM_PRICING_UNKNOWN]): value
        for attributes, value in telemetry.points(semconv.LLM_COST.name)
        if attributes.get(semconv.TENANT_ID) == "acme"
    }
    assert {key: value for key, value in cost.items() if key[0] == OTHER} == {
        (OTHER, True): 0.5,
        (OTHER, False): 1.0,
    }
