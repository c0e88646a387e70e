"""Past their caps, detailed label sets fold into named ``_OTHER`` sets (never a missing label):
the model-call histograms' shared pool, a tenant's per-model tokens, a tenant's pass-through
stop reasons, and the error types."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.emit.agents import AgentEmitters
from symfonic_otel.emit.budget import DETAIL_POOL, MAX_ERROR_TYPES, TENANT_DETAIL_SETS
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.testing.telemetry import InMemoryTelemetry

OTHER = semconv.OTHER_VALUE
DURATION = semconv.CLIENT_OPERATION_DURATION.name


def _emitter(telemetry: InMemoryTelemetry) -> MetricEmitter:
    meter = telemetry.meter_provider.get_meter("test")
    return MetricEmitter(meter, "planner", meter_provider=telemetry.meter_provider)


def _call(
    emitter: MetricEmitter,
    model: str,
    error: str | None = None,
    duration_s: float | None = None,
    tokens: tuple[int | None, int | None] = (None, None),
) -> None:
    emitter.model_call("acme", model, "react", None, error, duration_s, tokens, None, False, None)


def test_calls_past_the_histogram_pool_fold_but_keep_whether_they_failed(
    telemetry: InMemoryTelemetry,
) -> None:
    emitter = _emitter(telemetry)
    for index in range(DETAIL_POOL):
        _call(emitter, f"model-{index}")
    _call(emitter, "late-failing", "TimeoutError", 2.0)
    _call(emitter, "late-fine", None, 1.0)
    folded = {
        (attributes[semconv.GEN_AI_REQUEST_MODEL], attributes.get(semconv.ERROR_TYPE)): point.sum  # type: ignore[union-attr]
        for attributes, point in telemetry.points(DURATION)
    }
    assert folded == {(OTHER, OTHER): 2.0, (OTHER, None): 1.0}


def test_a_tenant_s_tokens_past_its_detail_sets_count_under_the_other_model(
    telemetry: InMemoryTelemetry,
) -> None:
    emitter = _emitter(telemetry)
    for index in range(TENANT_DETAIL_SETS + 1):
        _call(emitter, f"model-{index}", tokens=(10, None))
    by_model = {
        attributes.get(semconv.GEN_AI_REQUEST_MODEL): value
        for attributes, value in telemetry.points(semconv.LLM_TOKENS.name)
        if attributes.get(semconv.TENANT_ID) == "acme"
    }
    assert by_model[OTHER] == 10
    assert len(by_model) == TENANT_DETAIL_SETS + 1


def _stops(telemetry: InMemoryTelemetry, agent: str, tenant: str = "acme") -> set[object]:
    return {
        attributes.get(semconv.RUN_STOP_REASON)
        for attributes, _ in telemetry.points(semconv.STOP_REASONS.name)
        if attributes.get(semconv.GEN_AI_AGENT_NAME) == agent
        and attributes.get(semconv.TENANT_ID) == tenant
    }


def test_pass_through_stop_reasons_fold_past_the_label_cap_and_the_tenant_s_sets(
    telemetry: InMemoryTelemetry,
) -> None:
    emitters = AgentEmitters(_emitter(telemetry))
    planner, researcher = emitters(None), emitters("researcher")
    custom = [f"custom_{index}" for index in range(TENANT_DETAIL_SETS)]
    for reason in custom:
        planner.run_ended("acme", "completed", False, None, 1, reason)
    planner.run_ended("acme", "completed", False, None, 1, "one_too_many")
    assert _stops(telemetry, "planner") == {*custom, OTHER}
    # Another tenant, with sets to spare, still gets the capped label.
    planner.run_ended("globex", "completed", False, None, 1, "one_too_many")
    assert _stops(telemetry, "planner", "globex") == {OTHER}
    # The tenant's detailed stop sets are all taken: another agent's known label folds.
    researcher.run_ended("acme", "completed", False, None, 1, custom[0])
    assert _stops(telemetry, "researcher") == {OTHER}


def test_error_types_past_their_cap_are_labelled_other(telemetry: InMemoryTelemetry) -> None:
    emitter = _emitter(telemetry)
    labels = [emitter.errors(f"Error{index}") for index in range(MAX_ERROR_TYPES + 1)]
    assert labels[-1] == OTHER
    assert labels[0] == "Error0"
