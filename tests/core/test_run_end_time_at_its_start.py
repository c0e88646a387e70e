"""An explicit end time equal to the run's start (a run that took no measurable time, on a
coarse clock) is kept: only an end before the start is refused for the time of the end."""

from __future__ import annotations

import time

from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def test_an_end_time_equal_to_the_start_is_the_span_s_end(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    at = time.time_ns() - 60 * 10**9
    handler.agent_start(AgentStartEvent("q", "r1"), start_time_ns=at)
    handler.agent_end(AgentEndEvent("r1", "hi", 0.0, 1), end_time_ns=at)
    (run,) = telemetry.spans()
    assert (run.start_time, run.end_time) == (at, at)


def test_an_end_time_before_the_start_is_replaced_by_the_time_of_the_end(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    at = time.time_ns() - 60 * 10**9
    handler.agent_start(AgentStartEvent("q", "r1"), start_time_ns=at)
    handler.agent_end(AgentEndEvent("r1", "hi", 0.0, 1), end_time_ns=at - 1)
    (run,) = telemetry.spans()
    assert run.end_time is not None and run.end_time > at + 30 * 10**9
