"""Tool step events read field by field: which of two id fields pairs a call, what fails it.

A framework's tool event may carry both this package's ``tool_call_id`` and a generic ``id`` (the
event's own); the call id pairs start and result. A result fails on its error type alone, and on
a status in any case.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from opentelemetry.trace import StatusCode

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry


@dataclass
class _Start:
    tool_call_id: str
    id: str  # the event's own id, not the call's
    tool_name: str = "lookup"
    run_id: str = "r1"
    phase: str = "executing"


@dataclass
class _Result:
    tool_call_id: str
    id: str
    tool_name: str = "lookup"
    run_id: str = "r1"
    status: str = ""
    error_type: str | None = None
    result: str = "ok"


def _tool_span_after(telemetry: InMemoryTelemetry, result: _Result) -> dict[str, object]:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="q", run_id="r1"))
    handler.tool_call_start(_Start("call-1", "evt-1"))
    handler.tool_result(result)
    handler.agent_end(AgentEndEvent("r1", "a", 1.0, 1))
    span = telemetry.span("execute_tool lookup")
    attributes: dict[str, object] = dict(span.attributes or {})
    attributes["_status"] = span.status.status_code
    return attributes


def test_the_call_id_pairs_a_start_and_its_result_not_the_events_own_id(
    telemetry: InMemoryTelemetry,
) -> None:
    attributes = _tool_span_after(telemetry, _Result("call-1", "evt-2"))
    assert attributes[semconv.GEN_AI_TOOL_CALL_ID] == "call-1"
    assert semconv.STEP_UNFINISHED not in attributes  # its result closed it, not the run's end


def test_an_error_type_alone_fails_the_tool(telemetry: InMemoryTelemetry) -> None:
    result = _Result("call-1", "evt-2", error_type="PermissionError")
    attributes = _tool_span_after(telemetry, result)
    assert attributes[semconv.ERROR_TYPE] == "PermissionError"
    assert attributes["_status"] is StatusCode.ERROR


@pytest.mark.parametrize("status", ["Error", " FAILED "])
def test_a_failed_status_is_read_in_any_case(telemetry: InMemoryTelemetry, status: str) -> None:
    attributes = _tool_span_after(telemetry, _Result("call-1", "evt-2", status=status))
    assert attributes[semconv.ERROR_TYPE] == semconv.OTHER_VALUE


@dataclass
class _ResultWithErrorText(_Result):
    error: str = ""


@pytest.mark.parametrize(("error", "failed"), [("boom", True), ("  ", False)])
def test_error_text_on_a_result_fails_the_tool_unless_blank(
    telemetry: InMemoryTelemetry, error: str, failed: bool
) -> None:
    attributes = _tool_span_after(telemetry, _ResultWithErrorText("call-1", "evt-2", error=error))
    assert (semconv.ERROR_TYPE in attributes) is failed
