"""The sole open run (what Symfonic's run-less events belong to) is read under the registry's
lock: a run ending on another thread mid-read never makes the read fail or see a half state."""

from __future__ import annotations

from symfonic_otel.core.runs import RunRegistry
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.paused_section import PausedBefore


def test_the_sole_run_read_while_it_ends_is_the_run_not_a_failure(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r1"))
    registry = handler._core.runs
    with PausedBefore(RunRegistry.sole, "return next(iter(self._open.values()))") as read:
        read.start(registry.sole)
        ended = registry.pop("r1")  # waits for the read, under the lock
        sole = read.finish()
    assert ended is not None and sole is ended
    assert registry.sole() is None
    handler.agent_start(AgentStartEvent("q", "r2"))
    handler.agent_end(AgentEndEvent("r2", "answer", 10.0, 1))
    ended.span.end()
