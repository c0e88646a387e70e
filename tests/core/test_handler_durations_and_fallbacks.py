"""The handler's recorded durations against known elapsed times (seconds, never milliseconds),
and the documented fallbacks of missing values: ``_OTHER`` error types, the ``unknown`` tenant."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    LLMEndEvent,
    LLMStartEvent,
    NodeErrorEvent,
    NodeStartEvent,
)
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def _sums(telemetry: InMemoryTelemetry, spec: semconv.InstrumentSpec) -> list[float]:
    found = []
    for _, point in telemetry.points(spec.name):
        assert isinstance(point, HistogramDataPoint)
        found.append(point.sum)
    return found


def _start(handler: object, run_id: str = "r1", tenant: str | None = "acme") -> None:
    handler.agent_start(AgentStartEvent(query="q", run_id=run_id), tenant_id=tenant)  # type: ignore[attr-defined]


def _end(handler: object, run_id: str = "r1", **kwargs: object) -> None:
    event = AgentEndEvent(
        run_id=run_id,
        final_response=kwargs.pop("final_response", "an answer"),  # type: ignore[arg-type]
        duration_ms=kwargs.pop("duration_ms", 1500.0),  # type: ignore[arg-type]
        node_count=None,
        **kwargs,  # type: ignore[arg-type]
    )
    handler.agent_end(event)  # type: ignore[attr-defined]


@pytest.fixture
def handler(telemetry: InMemoryTelemetry) -> OTelCallbackHandler:
    """A handler on in-memory telemetry with run ``r1`` of tenant ``acme`` started."""
    started = telemetry.handler()
    _start(started)
    return started


# --- durations ----------------------------------------------------------------------------


def test_the_run_duration_an_event_reports_in_ms_is_recorded_in_seconds(
    telemetry: InMemoryTelemetry, handler: OTelCallbackHandler
) -> None:
    _end(handler, duration_ms=1500.0)
    assert _sums(telemetry, semconv.AGENT_DURATION) == [pytest.approx(1.5)]


def test_a_run_without_a_reported_duration_measures_its_own_in_seconds(
    telemetry: InMemoryTelemetry, handler: OTelCallbackHandler
) -> None:
    time.sleep(0.2)
    handler.agent_end(_NoDuration("r1"))
    [total] = _sums(telemetry, semconv.AGENT_DURATION)
    assert 0.2 <= total < 5.0


class _NoDuration:
    """An end event whose framework could not say how long the run took."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.final_response = "an answer"
        self.outcome = "completed"
        self.duration_ms = None
        self.node_count = None


def test_a_tool_timed_by_its_start_and_end_records_the_seconds_between(
    telemetry: InMemoryTelemetry, handler: OTelCallbackHandler
) -> None:
    t0 = time.time_ns()
    span = handler.start_tool("r1", "lookup", call_id="c1", start_time_ns=t0)
    handler.end_tool(span, end_time_ns=t0 + 250_000_000)
    _end(handler)
    assert _sums(telemetry, semconv.EXECUTE_TOOL_DURATION) == [pytest.approx(0.25)]


def test_a_model_call_stamped_with_start_and_ms_duration_records_seconds(
    telemetry: InMemoryTelemetry, handler: OTelCallbackHandler
) -> None:
    started = datetime.now(UTC) - timedelta(seconds=1)
    handler.llm_end(
        LLMEndEvent(
            model="gpt-4o",
            output="hi",
            usage={"input_tokens": 3, "output_tokens": 2},
            run_id="r1",
            duration_ms=400.0,
            started_at_utc=started.isoformat(),
        )
    )
    _end(handler)
    assert _sums(telemetry, semconv.CLIENT_OPERATION_DURATION) == [pytest.approx(0.4)]
    chat = telemetry.span(semconv.chat_span_name("gpt-4o"))
    assert chat.end_time is not None and chat.start_time is not None
    assert chat.end_time - chat.start_time == pytest.approx(400_000_000, abs=1_000)


def test_a_model_call_timed_from_its_llm_start_records_seconds(
    telemetry: InMemoryTelemetry, handler: OTelCallbackHandler
) -> None:
    handler.llm_start(LLMStartEvent(model="gpt-4o", messages=[], run_id="r1"))
    time.sleep(0.2)
    handler.llm_end(LLMEndEvent(model="gpt-4o", output="hi", usage={}, run_id="r1"))
    _end(handler)
    [total] = _sums(telemetry, semconv.CLIENT_OPERATION_DURATION)
    assert 0.2 <= total < 5.0


# --- fallbacks ------------------------------------------------------------------------------


def test_a_failed_run_without_an_error_type_reads_other_on_its_span(
    telemetry: InMemoryTelemetry, handler: OTelCallbackHandler
) -> None:
    _end(handler, final_response=None, outcome="error")
    span = telemetry.span(semconv.agent_span_name("symfonic"))
    assert (span.attributes or {})[semconv.ERROR_TYPE] == semconv.OTHER_VALUE


def test_a_node_error_without_an_error_type_reads_other_on_its_span(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(node_spans=True)
    _start(handler)
    handler.node_start(NodeStartEvent(node_name="plan", run_id="r1"))
    handler.node_error(NodeErrorEvent(node_name="plan", run_id="r1", error="boom", error_type=""))
    _end(handler)
    [node] = [s for s in telemetry.spans() if (s.attributes or {}).get(semconv.NODE_NAME) == "plan"]
    assert (node.attributes or {})[semconv.ERROR_TYPE] == semconv.OTHER_VALUE


@pytest.mark.parametrize("explicit", [True, False])
def test_a_failed_run_names_its_own_error_type_and_a_node_s_only_as_a_fallback(
    telemetry: InMemoryTelemetry, explicit: bool
) -> None:
    """A node that failed (and was handled) before the run itself failed on another exception:
    the run span's ``error.type`` is the run's own; the node's stands in only when the run
    end names none."""
    handler = telemetry.handler(node_spans=True)
    _start(handler)
    handler.node_start(NodeStartEvent(node_name="tools", run_id="r1"))
    handler.node_error(
        NodeErrorEvent(node_name="tools", run_id="r1", error="boom", error_type="KeyError")
    )
    event = AgentEndEvent(
        run_id="r1", final_response=None, duration_ms=10.0, node_count=None, outcome="error"
    )
    handler.agent_end(event, error_type="TimeoutError" if explicit else None)
    span = telemetry.span(semconv.agent_span_name("symfonic"))
    expected = "TimeoutError" if explicit else "KeyError"
    assert (span.attributes or {})[semconv.ERROR_TYPE] == expected


@pytest.mark.parametrize("tenant", [None, "", "   "])
def test_a_missing_or_blank_tenant_is_counted_as_unknown(
    tenant: str | None, telemetry: InMemoryTelemetry
) -> None:
    handler = telemetry.handler()
    _start(handler, tenant=tenant)
    _end(handler)
    assert telemetry.value(semconv.AGENT_RUNS.name) == 1
    assert (
        telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: semconv.TENANT_UNKNOWN}) == 1
    )
