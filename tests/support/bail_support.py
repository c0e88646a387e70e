"""Assertions every framework adapter's tests make of a silent bail, in the names of ``semconv``."""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import StatusCode

from symfonic_otel import semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def bails_of(telemetry: InMemoryTelemetry, tenant: str, reason: str | None = None) -> float:
    """Silent bails counted for ``tenant`` (of one termination reason, when given)."""
    where: dict[str, Any] = {semconv.TENANT_ID: tenant}
    if reason is not None:
        where[semconv.REACT_TERMINATION_REASON] = reason
    return telemetry.value(semconv.SILENT_BAILS.name, where)


def assert_raised_step_cap(telemetry: InMemoryTelemetry, tenant: str, error_type: str) -> None:
    """One run of ``tenant`` ended by a framework's budget error: a bail while still calling
    tools, outcome ``error``, stop reason ``recursion_limit``, on the counters and the run span."""
    assert bails_of(telemetry, tenant, "tool_calls_with_no_text") == 1
    assert telemetry.value(semconv.SILENT_BAILS.name) == 1
    runs = {semconv.TENANT_ID: tenant, semconv.RUN_OUTCOME: "error"}
    assert telemetry.value(semconv.AGENT_RUNS.name, runs) == 1
    stops = {semconv.RUN_STOP_REASON: "recursion_limit"}
    assert telemetry.value(semconv.STOP_REASONS.name, stops) == 1
    run = telemetry.span("invoke_agent helper")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes is not None
    assert run.attributes[semconv.ERROR_TYPE] == error_type
    assert run.attributes[semconv.RUN_STOP_REASON] == "recursion_limit"
    assert run.attributes[semconv.REACT_TERMINATION_REASON] == "tool_calls_with_no_text"
    assert run.attributes[semconv.TENANT_ID] == tenant
