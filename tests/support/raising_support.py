"""Assertions of a run whose model or tool raised, in the names of ``semconv``."""

from __future__ import annotations

from opentelemetry.trace import StatusCode

from symfonic_otel import semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry

RUN_SPAN = "invoke_agent helper"


def assert_error_run(
    telemetry: InMemoryTelemetry, tenant: str, error: BaseException, span: str = RUN_SPAN
) -> None:
    """One run of ``tenant`` ended ``error`` with the class name of ``error``, never a bail."""
    error_type = type(error).__name__
    runs = {semconv.TENANT_ID: tenant, semconv.RUN_OUTCOME: "error"}
    assert telemetry.value(semconv.AGENT_RUNS.name, runs) == 1
    assert telemetry.value(semconv.AGENT_RUNS.name) == 1
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0
    run = telemetry.span(span)
    assert run.status.status_code is StatusCode.ERROR
    assert (run.attributes or {})[semconv.ERROR_TYPE] == error_type


def assert_completed_with_failed_tool(
    telemetry: InMemoryTelemetry, tenant: str, tool_span: str, span: str = RUN_SPAN
) -> None:
    """One run of ``tenant`` went on past a failed tool and completed: no error, no bail."""
    runs = {semconv.TENANT_ID: tenant, semconv.RUN_OUTCOME: "completed"}
    assert telemetry.value(semconv.AGENT_RUNS.name, runs) == 1
    assert telemetry.value(semconv.AGENT_RUNS.name) == 1
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0
    assert semconv.ERROR_TYPE not in (telemetry.span(span).attributes or {})
    tool = telemetry.span(tool_span)
    assert (tool.attributes or {}).get(semconv.ERROR_TYPE) is not None
