"""A run its framework names is active under that agent name from its start to its end: the
active-runs gauge rises and falls on the same series, so no series is left at +1 or -1."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

ACTIVE = semconv.ACTIVE_RUNS.name


def _active(telemetry: InMemoryTelemetry) -> dict[object, float]:
    return {
        attrs.get(semconv.GEN_AI_AGENT_NAME): value  # type: ignore[misc]
        for attrs, value in telemetry.points(ACTIVE)
    }


def test_a_named_run_is_active_under_its_name_from_start_to_end(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(agent_name="symfonic")
    handler.agent_start(
        AgentStartEvent("q", "r1"), attributes={semconv.GEN_AI_AGENT_NAME: "researcher"}
    )
    during = _active(telemetry)
    assert during.get("researcher") == 1
    assert during.get("symfonic", 0) == 0
    handler.agent_end(AgentEndEvent("r1", "answer", 1.0, 1))
    after = _active(telemetry)
    assert after.get("researcher") == 0
    assert after.get("symfonic", 0) == 0


def test_a_named_run_abandoned_at_the_cap_leaves_its_name_s_series(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(agent_name="symfonic", max_open_runs=1)
    handler.agent_start(
        AgentStartEvent("q", "r1"), attributes={semconv.GEN_AI_AGENT_NAME: "researcher"}
    )
    handler.agent_start(AgentStartEvent("q", "r2"))  # past the cap: the named run is abandoned
    active = _active(telemetry)
    assert active.get("researcher") == 0
    assert active.get("symfonic") == 1
    abandoned = {semconv.RUN_OUTCOME: "abandoned"}
    assert telemetry.value(semconv.AGENT_RUNS.name, abandoned) == 1
    assert (
        telemetry.value(
            semconv.AGENT_RUNS.name, {**abandoned, semconv.GEN_AI_AGENT_NAME: "researcher"}
        )
        == 1
    )
    handler.agent_end(AgentEndEvent("r2", "answer", 1.0, 1))


def test_a_named_run_s_tenant_gets_zero_series_under_that_name(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(agent_name="symfonic")
    handler.agent_start(
        AgentStartEvent("q", "r1"),
        tenant_id="acme",
        attributes={semconv.GEN_AI_AGENT_NAME: "researcher"},
    )
    seeded = {
        (attrs.get(semconv.GEN_AI_AGENT_NAME), attrs.get(semconv.TENANT_ID), value)
        for attrs, value in telemetry.points(semconv.SILENT_BAILS.name, include_zeros=True)
    }
    assert ("researcher", "acme", 0) in seeded  # a rate over it reads 0 before the first bail
    handler.agent_end(AgentEndEvent("r1", "answer", 1.0, 1))
