"""Assertions of a run whose model or tool raised, in the names of ``semconv``."""

from __future__ import annotations

from opentelemetry.trace import StatusCode

from symfonic_otel import semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry

RUN_SPAN = "invoke_agent helper"


def assert_error_run(
    telemetry: InMemoryTelemetry,
    tenant: str,
    error: BaseException,
    span: str = RUN_SPAN,
    error_type: str | None = None,
) -> None:
    """One run of ``tenant`` ended ``error`` with the class name of ``error`` (or ``error_type``
    where the framework does not say the class), never a bail."""
    error_type = error_type or type(error).__name__
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
    tools = [s for s in telemetry.spans() if s.name == tool_span]  # a framework may retry it
    assert tools and all((s.attributes or {}).get(semconv.ERROR_TYPE) for s in tools), tools
