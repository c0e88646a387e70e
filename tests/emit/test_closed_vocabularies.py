"""The closed vocabularies a tenant's series are built from: each of the nine documented
fabrication (mode, action) pairs keeps its own series, and a tenant's first run, still open,
already has every seeded run outcome at zero."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

PAIRS = [
    ("off", "none"),
    ("observe", "observed"),
    ("observe", "none"),
    ("revise", "revise_forced"),
    ("revise", "observed"),
    ("revise", "none"),
    ("refuse", "refuse_replaced"),
    ("refuse", "observed"),
    ("refuse", "none"),
]


@pytest.mark.parametrize(("mode", "action"), PAIRS)
def test_each_documented_fabrication_pair_keeps_its_own_series(
    telemetry: InMemoryTelemetry, mode: str, action: str
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    handler.fabrication_detected(
        SimpleNamespace(run_id="r", mode=mode, action_taken=action, max_finding_confidence=0.5)
    )
    handler.agent_end(AgentEndEvent("r", "answer", 1.0, 1))
    pair = (semconv.FABRICATION_MODE, semconv.FABRICATION_ACTION)
    counted = {
        tuple(attrs[key] for key in pair): value
        for attrs, value in telemetry.points(semconv.FABRICATION_DETECTIONS.name)
    }
    assert counted == {(mode, action): 1}


def test_a_new_tenant_has_every_seeded_run_outcome_at_zero_before_its_run_ends(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    with tenant_scope("acme"):
        handler.agent_start(AgentStartEvent("q", "open"))
    outcomes = {
        (attrs[semconv.RUN_OUTCOME], attrs.get(semconv.RESPONSE_EMPTY))
        for attrs, value in telemetry.points(semconv.AGENT_RUNS.name, include_zeros=True)
        if attrs[semconv.TENANT_ID] == "acme" and value == 0
    }
    handler.agent_end(AgentEndEvent("open", "answer", 1.0, 1))
    assert outcomes == {("completed", False), ("completed", True), ("error", None)}
