"""What a run ended by a framework's step cap with a forced final answer looks like, and what an
answered run looks like, for the adapters whose framework forces one (LlamaIndex ``generate``,
smolagents ``max_steps``): a silent bail, then one synthesis fallback on its own model call."""

from __future__ import annotations

from typing import Any

from symfonic_otel import semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.bail_support import bails_of

RUN_SPAN = "invoke_agent helper"
FALLBACKS = semconv.SYNTHESIS_FALLBACKS.name


def fallback_spans(telemetry: InMemoryTelemetry) -> list[Any]:
    return [
        span
        for span in telemetry.spans()
        if (span.attributes or {}).get(semconv.NODE_NAME) == semconv.NODE_SYNTHESIZE_FALLBACK
    ]


def assert_forced_answer(
    telemetry: InMemoryTelemetry, tenant: str, recovered: bool, outcome: str = "completed"
) -> None:
    """A run the cap ended with a forced answer (``outcome``: ``error`` when the forced call
    raised): a bail with stop reason ``recursion_limit``, one synthesis fallback (recovered or
    not) on its own model call."""
    assert bails_of(telemetry, tenant, "tool_calls_with_no_text") == 1
    assert telemetry.value(semconv.SILENT_BAILS.name) == 1
    stops = {semconv.TENANT_ID: tenant, semconv.RUN_STOP_REASON: "recursion_limit"}
    assert telemetry.value(semconv.STOP_REASONS.name, stops) == 1
    ended = {semconv.TENANT_ID: tenant, semconv.RUN_OUTCOME: outcome}
    assert telemetry.value(semconv.AGENT_RUNS.name, ended) == 1
    where = {semconv.TENANT_ID: tenant, semconv.SYNTHESIS_RECOVERED: recovered}
    assert telemetry.value(FALLBACKS, where) == telemetry.value(FALLBACKS) == 1
    (fallback,) = fallback_spans(telemetry)
    assert (fallback.attributes or {})[semconv.SYNTHESIS_RECOVERED] is recovered
    root = dict(telemetry.span(RUN_SPAN).attributes or {})
    assert root[semconv.RUN_STOP_REASON] == "recursion_limit"
    assert root[semconv.REACT_TERMINATION_REASON] == "tool_calls_with_no_text"
    if outcome == "completed":  # the user got the forced answer, or nothing
        assert root[semconv.RESPONSE_EMPTY] is not recovered


def assert_answered(telemetry: InMemoryTelemetry, tenant: str) -> None:
    """A run that answered within its budget: no bail, no fallback, an answer."""
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0
    assert telemetry.value(FALLBACKS) == 0
    ended = {semconv.TENANT_ID: tenant, semconv.RUN_OUTCOME: "completed"}
    assert telemetry.value(semconv.AGENT_RUNS.name, ended) == 1
    root = dict(telemetry.span(RUN_SPAN).attributes or {})
    assert root[semconv.RUN_STOP_REASON] == "end_turn"
    assert root[semconv.RESPONSE_EMPTY] is False
    assert semconv.REACT_TERMINATION_REASON not in root
    assert fallback_spans(telemetry) == []
