"""Which source times a model call, and which run's facts a call or a check is paired with.

A call's times come from the adapter's ``start_time_ns`` / ``end_time_ns`` or from the event's
own timing when either is there, and from its LLMStart only when neither is; a call naming no
run is no loss while one naming an unknown run is; a fabrication check of a run is counted
under the run's tenant, not the handler's default.
"""

from __future__ import annotations

import time

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    FabricationDetectedEvent,
    LLMEndEvent,
    LLMStartEvent,
)
from symfonic_otel.testing.telemetry import InMemoryTelemetry

USAGE = {"input_tokens": 3, "output_tokens": 2}
UNKNOWN_RUN = {semconv.TELEMETRY_DROP_REASON: "unknown_run"}


def _started_run(telemetry: InMemoryTelemetry) -> OTelCallbackHandler:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r1"))
    handler.llm_start(LLMStartEvent("claude-sonnet-4-5", [], run_id="r1"))
    return handler


def test_the_adapter_s_start_time_wins_over_the_pending_llm_start(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = _started_run(telemetry)
    start = time.time_ns() - 5_000_000_000
    handler.llm_end(
        LLMEndEvent("claude-sonnet-4-5", "hi", USAGE, run_id="r1"),
        start_time_ns=start,
        end_time_ns=start + 1_500_000_000,
    )
    handler.agent_end(AgentEndEvent("r1", "answer", 10.0, 1))
    [call] = [s for s in telemetry.spans() if s.name.startswith("chat")]
    assert (call.start_time, call.end_time) == (start, start + 1_500_000_000)


def test_the_event_s_own_duration_wins_over_the_pending_llm_start(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = _started_run(telemetry)
    handler.llm_end(LLMEndEvent("claude-sonnet-4-5", "hi", USAGE, run_id="r1", duration_ms=2_000.0))
    handler.agent_end(AgentEndEvent("r1", "answer", 10.0, 1))
    [call] = [s for s in telemetry.spans() if s.name.startswith("chat")]
    assert call.end_time is not None and call.start_time is not None
    assert abs((call.end_time - call.start_time) - 2_000_000_000) < 1_000_000
    [(_, point)] = telemetry.points(semconv.CLIENT_OPERATION_DURATION.name)
    assert abs(point.sum - 2.0) < 0.001  # type: ignore[union-attr]


def test_a_call_of_no_run_is_no_loss_but_one_of_an_unknown_run_is(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.llm_end(LLMEndEvent("claude-sonnet-4-5", "hi", USAGE))
    assert telemetry.value(semconv.DROPPED_EVENTS.name) == 0
    handler.llm_end(LLMEndEvent("claude-sonnet-4-5", "hi", USAGE, run_id="gone"))
    assert telemetry.value(semconv.DROPPED_EVENTS.name, UNKNOWN_RUN) == 1


def test_a_fabrication_check_of_a_run_is_counted_under_the_run_s_tenant(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(tenant_id="fallback")
    handler.agent_start(AgentStartEvent("q", "r1"), tenant_id="acme")
    check = FabricationDetectedEvent("r1", "observe", "observed", [], 0.8, 0.5, "", None, False)
    handler.fabrication_detected(check)
    handler.agent_end(AgentEndEvent("r1", "answer", 10.0, 1))
    detections = semconv.FABRICATION_DETECTIONS.name
    assert telemetry.value(detections, {semconv.TENANT_ID: "acme"}) == 1
    assert telemetry.value(detections, {semconv.TENANT_ID: "fallback"}) == 0
