"""A run's step state is made once, whichever of two threads asks first: the second waits for
the first's, so a model call or tool registered by either lands in the one the run keeps."""

from __future__ import annotations

from symfonic_otel.core.runs import OpenRun
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.paused_section import PausedBefore


def test_two_threads_making_a_run_s_step_state_get_the_same_one(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r1"))
    run = handler._core.runs.get("r1")
    assert run is not None and run.steps is None
    with PausedBefore(OpenRun.step_state, "steps = self.steps = RunSteps()") as first:
        first.start(run.step_state)
        second = run.step_state()  # waits for the first thread's, under the lock
        made = first.finish()
    kept = run.steps
    handler.agent_end(AgentEndEvent("r1", "answer", 10.0, 1))
    assert second is made is kept
