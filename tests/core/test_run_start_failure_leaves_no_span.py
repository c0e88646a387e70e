"""A run start that fails after its span opened (here: attributes whose reading raises) ends
that span: a span registered nowhere would never be ended by the sweep or at shutdown, so it
would never be exported. The failure never reaches the agent."""

from __future__ import annotations

from typing import Any

from symfonic_otel import semconv
from symfonic_otel.events import AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry


class _RaisingOnGet(dict[str, Any]):
    """Attributes that iterate well but raise when one is looked up."""

    def get(self, key: str, default: Any = None) -> Any:
        raise RuntimeError("unreadable")


def test_a_run_start_failing_after_its_span_opened_ends_the_span(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    attributes = _RaisingOnGet({semconv.GEN_AI_AGENT_NAME: "helper"})
    handler.agent_start(AgentStartEvent("q", "r1"), attributes=attributes)  # never raises
    assert telemetry.unended_spans == []
    assert telemetry.open_runs == 0
