"""A detection reporting a confidence above 1 (a detector's score on another scale, or a bug)
is recorded as 1: the confidence histogram's buckets and sums stay those of a probability."""

from __future__ import annotations

from types import SimpleNamespace

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def test_a_confidence_above_one_is_recorded_as_one(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    for confidence in (1.7, 0.4):
        handler.fabrication_detected(
            SimpleNamespace(
                run_id="r",
                mode="observe",
                action_taken="observed",
                max_finding_confidence=confidence,
            )
        )
    handler.agent_end(AgentEndEvent("r", "answer", 1.0, 1))
    ((_, point),) = telemetry.points(semconv.FABRICATION_CONFIDENCE.name)
    assert point.sum == 1.4  # type: ignore[union-attr]
    assert point.max == 1.0  # type: ignore[union-attr]
