"""Event fields the handler reads through two sources or a cleaning step, on the real OTel SDK.

A call's failure comes from its outcome or from the adapter's explicit error type; a stop reason
is trimmed before it is compared; a run's bad duration is counted as malformed while the run
still ends; a typed fabrication event that also names a legacy ``type`` is still a detection;
a bool where a count belongs is not a count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import StatusCode

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

MALFORMED = {semconv.TELEMETRY_DROP_REASON: "malformed"}


def _span_attributes(telemetry: InMemoryTelemetry, name: str) -> dict[str, Any]:
    return dict(telemetry.span(name).attributes or {})


def test_an_explicit_error_type_fails_a_call_whose_event_says_completed(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.llm_end(LLMEndEvent(model="m-1", output="", usage={}), error_type="ReadTimeout")
    span = telemetry.span("chat m-1")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})[semconv.ERROR_TYPE] == "ReadTimeout"


def test_a_stop_reason_is_trimmed_before_it_is_recorded(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.llm_end(LLMEndEvent(model="m-1", output="", usage={}, stop_reason="  length\n"))
    attributes = _span_attributes(telemetry, "chat m-1")
    assert attributes[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ("length",)


def test_a_run_with_a_negative_duration_still_ends_and_is_counted_malformed(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="q", run_id="r1"))
    handler.agent_end(
        AgentEndEvent(run_id="r1", final_response="a", duration_ms=-5.0, node_count=1)
    )
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.RUN_OUTCOME: "completed"}) == 1
    assert telemetry.value(semconv.DROPPED_EVENTS.name, MALFORMED) == 1


@dataclass
class _TypedDetection:
    """A typed fabrication event that also carries a ``type`` (as an extension event would)."""

    run_id: str
    mode: str = "observe"
    action_taken: str = "observed"
    max_finding_confidence: float = 0.6
    type: str = "fabrication_detected"


def test_a_typed_detection_naming_a_legacy_type_is_still_counted(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="q", run_id="r1"))
    handler.fabrication_detected(_TypedDetection("r1"))
    handler.agent_end(AgentEndEvent(run_id="r1", final_response="a", duration_ms=1.0, node_count=1))
    where = {semconv.FABRICATION_ACTION: "observed"}
    assert telemetry.value(semconv.FABRICATION_DETECTIONS.name, where) == 1


def test_a_bool_iteration_index_is_not_taken_as_a_count(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    event = LLMEndEvent(model="m-1", output="", usage={}, iteration_index=True)
    handler.llm_end(event)
    assert _span_attributes(telemetry, "chat m-1")[semconv.REACT_ITERATION_INDEX] == 0


def test_the_adapters_explicit_error_type_wins_over_the_events_own(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    event = LLMEndEvent(model="m-1", output="", usage={}, outcome="error", error_type="Wrapper")
    handler.llm_end(event, error_type="APIConnectionError")
    assert _span_attributes(telemetry, "chat m-1")[semconv.ERROR_TYPE] == "APIConnectionError"


def test_a_failed_runs_own_stop_reason_wins_over_the_one_derived_from_its_outcome(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    for run_id, given in (("r1", "recursion_limit"), ("r2", None)):
        handler.agent_start(AgentStartEvent(query="q", run_id=run_id))
        end = AgentEndEvent(
            run_id=run_id,
            final_response=None,
            duration_ms=1.0,
            node_count=1,
            outcome="error",
            stop_reason=given,
            error_type="GraphRecursionError",
        )
        handler.agent_end(end)
    reasons = sorted(
        str((span.attributes or {})[semconv.RUN_STOP_REASON])
        for span in telemetry.spans()
        if span.name.startswith("invoke_agent")
    )
    assert reasons == ["error", "recursion_limit"]  # derived only when the event names none
