"""The handler's own agent name is always its own label: named explicitly by a run it takes none
of the ``MAX_AGENT_NAMES`` slots, and it still reads as itself (never ``_OTHER``) once other
names have filled them."""

from __future__ import annotations

import pytest

from symfonic_otel import semconv
from symfonic_otel.emit.agents import AgentEmitters
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def _name(emitter: MetricEmitter) -> object:
    return emitter.agent_attrs[semconv.GEN_AI_AGENT_NAME]


@pytest.mark.parametrize("default_first", [True, False], ids=["default-first", "default-last"])
def test_the_default_name_is_never_capped(
    telemetry: InMemoryTelemetry, default_first: bool
) -> None:
    meter = telemetry.meter_provider.get_meter("test")
    base = MetricEmitter(meter, "planner", meter_provider=telemetry.meter_provider)
    emitters = AgentEmitters(base, cap=2)
    if default_first:
        assert emitters("planner") is base
    assert [_name(emitters(name)) for name in ("researcher", "writer")] == [
        "researcher",
        "writer",
    ]
    assert emitters("planner") is base
    assert _name(emitters("critic")) == semconv.OTHER_VALUE  # past the cap
    assert emitters.names() == ["planner", "researcher", "writer", semconv.OTHER_VALUE]
