"""Deferred recording: nothing queued is lost, the queue stays bounded, handlers share a hook."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from symfonic_otel import __version__
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.recorder import DeferredRecorder, recorder_for
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def test_queue_is_bounded_and_applies_oldest_inline_when_full() -> None:
    applied: list[float] = []

    def apply(value: float, attributes: Mapping[str, Any]) -> None:
        applied.append(value)

    recorder = DeferredRecorder(cap=3)
    for value in range(5):
        recorder.record(apply, float(value), {})
    assert recorder.pending == 3
    assert applied == [0.0, 1.0]
    assert recorder.drain() == 3
    assert applied == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert recorder.pending == 0


def test_a_failing_measurement_does_not_stall_the_queue() -> None:
    applied: list[float] = []

    def apply(value: float, attributes: Mapping[str, Any]) -> None:
        if value == 1.0:
            raise ValueError("bad")
        applied.append(value)

    recorder = DeferredRecorder()
    for value in (0.0, 1.0, 2.0):
        recorder.record(apply, value, {})
    recorder.drain()
    assert applied == [0.0, 2.0]
    assert recorder.failed == 1


def test_collection_applies_everything_queued(telemetry: InMemoryTelemetry) -> None:
    first = telemetry.handler(agent_name="a")
    second = telemetry.handler(agent_name="b")
    meter = telemetry.meter_provider.get_meter("symfonic_otel", __version__)
    assert recorder_for(meter).pending == 0
    for handler in (first, second):
        for i in range(10):
            handler.agent_start(AgentStartEvent("q", f"r{i}"))
            handler.agent_end(AgentEndEvent(f"r{i}", "x", 1.0, 1))
    assert recorder_for(meter).pending > 0  # queued, not yet applied
    assert telemetry.value("symfonic.agent.runs", {"gen_ai.agent.name": "a"}) == 10
    assert telemetry.value("symfonic.agent.runs", {"gen_ai.agent.name": "b"}) == 10
    assert recorder_for(meter).pending == 0
