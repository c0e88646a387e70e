"""Agent-duration series follow each run's outcome (keys that differ only in the outcome)."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

# --- the attribute cache: keys that differ only in the run's outcome -------------------------


def test_agent_duration_series_follow_each_runs_outcome(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(tenant_id="acme")
    outcomes = ["completed", "error", "completed", "cancelled"]
    for index, outcome in enumerate(outcomes):
        run_id = f"r{index}"
        handler.agent_start(AgentStartEvent("q", run_id))
        handler.agent_end(AgentEndEvent(run_id, "a", 5.0, 1, outcome=outcome))  # type: ignore[arg-type]
    counts = {
        attributes[semconv.RUN_OUTCOME]: point.count
        for attributes, point in telemetry.points(semconv.AGENT_DURATION.name)
    }
    assert counts == {"completed": 2, "error": 1, "cancelled": 1}
    runs = {
        attributes[semconv.RUN_OUTCOME]: value
        for attributes, value in telemetry.points(semconv.AGENT_RUNS.name)
    }
    assert runs == {"completed": 2, "error": 1, "cancelled": 1}
