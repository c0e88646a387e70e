"""With ``tenant_histograms=True`` a run's call counts carry its tenant and its outcome: a
tenant's failed run and its completed run land on two series, and two tenants with one outcome
on two more (a set cached by tenant alone would keep the first run's outcome for good)."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def test_each_tenant_and_outcome_has_its_own_series(telemetry: InMemoryTelemetry) -> None:
    meter = telemetry.meter_provider.get_meter("test")
    emitter = MetricEmitter(
        meter, "planner", meter_provider=telemetry.meter_provider, tenant_histograms=True
    )
    emitter.loops.run_calls("acme", "completed", 2, 1)
    emitter.loops.run_calls("acme", "error", 5, 3)
    emitter.loops.run_calls("globex", "completed", 7, None)
    emitter.loops.run_calls("acme", "completed", 4, 0)
    counts = {
        (
            attributes.get(semconv.TENANT_ID),
            attributes.get(semconv.RUN_OUTCOME),
            attributes.get(semconv.GEN_AI_AGENT_NAME),
        ): (point.count, point.sum)  # type: ignore[union-attr]
        for attributes, point in telemetry.points(semconv.INVOKE_AGENT_INFERENCE_CALLS.name)
    }
    assert counts == {
        ("acme", "completed", "planner"): (2, 6),
        ("acme", "error", "planner"): (1, 5),
        ("globex", "completed", "planner"): (1, 7),
    }
