"""A handler wired to the providers ``configure_telemetry`` made, as an application wires it."""

from __future__ import annotations

from typing import Any

from symfonic_otel import OTelCallbackHandler
from symfonic_otel.events import AgentStartEvent
from symfonic_otel.export.setup import Telemetry


def handler_on(telemetry: Telemetry, **options: Any) -> OTelCallbackHandler:
    """An ``OTelCallbackHandler`` on ``telemetry``'s tracer and meter providers."""
    return OTelCallbackHandler(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        **options,
    )


def shut_one_of_two(first: Telemetry, second: Telemetry) -> OTelCallbackHandler:
    """A run open on a handler of each; ``first`` shut down: its handler's run is closed, the
    handler on ``second`` (returned) keeps its own open."""
    mine, theirs = handler_on(first), handler_on(second)
    mine.agent_start(AgentStartEvent("q", "mine"))
    theirs.agent_start(AgentStartEvent("q", "theirs"))
    first.shutdown(timeout_millis=5_000)
    assert (mine.open_runs, theirs.open_runs) == (0, 1)
    return theirs
