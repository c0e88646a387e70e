"""The series a model call lands on: the tenant on its histograms only with
``tenant_histograms=True``; its time to first chunk on the set of a successful call; a
handler's pool of detailed operation sets, past which a set folds into ``_OTHER`` and still says
whether the call failed; a tenant's detailed token sets, past which a model is ``_OTHER``; and
the documented caps on error types and pass-through stop reasons."""

from __future__ import annotations

from typing import Any

import pytest

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.emit.agents import AgentEmitters
from symfonic_otel.emit.budget import (
    DETAIL_POOL,
    MAX_ERROR_TYPES,
    MAX_PASSTHROUGH_STOP_REASONS,
    TENANT_DETAIL_SETS,
)
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.events import LLMEndEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

OTHER = semconv.OTHER_VALUE
DURATION = semconv.CLIENT_OPERATION_DURATION.name
TTFC = semconv.CLIENT_TIME_TO_FIRST_CHUNK.name
TOKENS = semconv.CLIENT_TOKEN_USAGE.name
USAGE = {"input_tokens": 3, "output_tokens": 5}


def _emitter(telemetry: InMemoryTelemetry) -> MetricEmitter:
    provider = telemetry.meter_provider
    return MetricEmitter(provider.get_meter("t"), "ops", meter_provider=provider)


def _call(
    emitter: MetricEmitter,
    model: str,
    error: str | None = None,
    tokens: tuple[int | None, int | None] = (3, 5),
    **more: Any,
) -> None:
    emitter.model_call(
        "acme", model, "react", "openai", error, 0.5, tokens, 0.0, False, None, **more
    )


def _counts(telemetry: InMemoryTelemetry, name: str, *keys: str) -> dict[tuple[Any, ...], int]:
    found: dict[tuple[Any, ...], int] = {}
    for attributes, point in telemetry.points(name):
        key = tuple(attributes.get(k) for k in keys)
        found[key] = found.get(key, 0) + getattr(point, "count", point)  # type: ignore[arg-type]
    return found


@pytest.mark.parametrize("per_tenant", [True, False])
def test_a_model_call_s_histograms_name_its_tenant_only_with_tenant_histograms(
    telemetry: InMemoryTelemetry, per_tenant: bool
) -> None:
    handler = telemetry.handler(tenant_histograms=per_tenant)
    with tenant_scope("acme"):
        handler.llm_end(LLMEndEvent("gpt-4o", "x", USAGE), time_to_first_chunk_s=0.2)
    for name in (DURATION, TTFC, TOKENS):
        tenants = {a.get(semconv.TENANT_ID) for a, _ in telemetry.points(name)}
        assert tenants == ({"acme"} if per_tenant else {None}), name


@pytest.mark.parametrize("succeeded_first", [True, False])
def test_a_failed_call_s_first_chunk_is_timed_on_the_successful_call_s_set(
    telemetry: InMemoryTelemetry, succeeded_first: bool
) -> None:
    emitter = _emitter(telemetry)
    calls = [None, "RateLimitError"] if succeeded_first else ["RateLimitError", None]
    for error in calls:
        _call(emitter, "gpt-4o", error, ttfc_s=0.2)
    expected = {
        semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
        semconv.GEN_AI_PROVIDER_NAME: "openai",
        semconv.GEN_AI_REQUEST_MODEL: "gpt-4o",
        semconv.NODE_NAME: "react",
    }
    assert [(a, p.count) for a, p in telemetry.points(TTFC)] == [(expected, 2)]  # type: ignore[union-attr]


def test_past_the_detail_pool_an_operation_set_folds_into_other_and_keeps_its_failure(
    telemetry: InMemoryTelemetry,
) -> None:
    emitter = _emitter(telemetry)
    errors = [None, "E1", "E2", "E3", "E4"]
    for index in range(DETAIL_POOL // len(errors)):  # exactly DETAIL_POOL sets, each admitted
        for error in errors:
            _call(emitter, f"model-{index}", error, (None, None))
    _call(emitter, "model-0", "E5", (None, None))  # a new error type: one set too many
    _call(emitter, "model-1", "E6", (None, None))  # and another
    _call(emitter, "late", None, (None, None))  # a new model: one set too many
    _call(emitter, "model-1", "E1", (None, None))  # admitted: keeps its labels
    sets = _counts(telemetry, DURATION, semconv.GEN_AI_REQUEST_MODEL, semconv.ERROR_TYPE)
    assert len(sets) == DETAIL_POOL + 2
    assert sets[("model-1", "E1")] == 2
    assert sets[(OTHER, OTHER)] == 2  # the failed calls, folded
    assert sets[(OTHER, None)] == 1  # the successful one, folded
    folded = [a for a, _ in telemetry.points(DURATION) if a[semconv.GEN_AI_REQUEST_MODEL] == OTHER]
    assert {(a[semconv.NODE_NAME], a[semconv.GEN_AI_PROVIDER_NAME]) for a in folded} == {
        (OTHER, OTHER)
    }


def test_a_tenant_s_tokens_past_its_detailed_sets_are_counted_under_model_other(
    telemetry: InMemoryTelemetry,
) -> None:
    emitter = _emitter(telemetry)
    for index in range(TENANT_DETAIL_SETS // 2 + 1):  # two token types: a set each per model
        _call(emitter, f"model-{index}")
    tokens = _counts(
        telemetry,
        semconv.LLM_TOKENS.name,
        semconv.GEN_AI_REQUEST_MODEL,
        semconv.GEN_AI_TOKEN_TYPE,
    )
    assert tokens[(OTHER, semconv.TOKEN_TYPE_INPUT)] == 3
    assert tokens[(OTHER, semconv.TOKEN_TYPE_OUTPUT)] == 5
    assert len(tokens) == TENANT_DETAIL_SETS + 2


def test_the_65th_error_type_is_counted_under_other(telemetry: InMemoryTelemetry) -> None:
    emitter = _emitter(telemetry)
    for index in range(MAX_ERROR_TYPES + 1):
        emitter.tool_call("acme", "search", f"Error{index}", 0.1, None)
    errors = _counts(telemetry, semconv.EXECUTE_TOOL_DURATION.name, semconv.ERROR_TYPE)
    assert len(errors) == MAX_ERROR_TYPES + 1
    assert errors[(f"Error{MAX_ERROR_TYPES - 1}",)] == 1
    assert errors[(OTHER,)] == 1


def _stops(telemetry: InMemoryTelemetry) -> dict[tuple[Any, ...], int]:
    return _counts(
        telemetry, semconv.STOP_REASONS.name, semconv.GEN_AI_AGENT_NAME, semconv.RUN_STOP_REASON
    )


def test_the_17th_pass_through_stop_reason_is_counted_under_other(
    telemetry: InMemoryTelemetry,
) -> None:
    """The cap is the handler's: a tenant with no reason of its own yet gets ``_OTHER`` too."""
    emitter = _emitter(telemetry)
    for index in range(MAX_PASSTHROUGH_STOP_REASONS):
        emitter.run_ended("acme", "completed", False, None, 1, f"stop-{index}")
    emitter.run_ended("globex", "completed", False, None, 1, "one-more")
    stops = _stops(telemetry)
    assert len(stops) == MAX_PASSTHROUGH_STOP_REASONS + 1
    assert stops[("ops", f"stop-{MAX_PASSTHROUGH_STOP_REASONS - 1}")] == 1
    assert stops[("ops", OTHER)] == 1


def test_a_tenant_s_stop_reasons_past_its_detailed_sets_fold_into_its_other_set(
    telemetry: InMemoryTelemetry,
) -> None:
    """Two agent names share the tenant's detailed sets: the second one's reasons fold."""
    emitters = AgentEmitters(_emitter(telemetry))
    for agent in ("first", "second"):
        for index in range(TENANT_DETAIL_SETS):
            emitters(agent).run_ended("acme", "completed", False, None, 1, f"stop-{index}")
    stops = _stops(telemetry)
    assert stops == {
        **{("first", f"stop-{index}"): 1 for index in range(TENANT_DETAIL_SETS)},
        ("second", OTHER): TENANT_DETAIL_SETS,
    }
