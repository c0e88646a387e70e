"""A model call's time to first chunk: the adapter's explicit value wins over the one the
handler measured from the call's LLMStart to its first text delta; without one, the measured
value is recorded."""

from __future__ import annotations

import pytest

from symfonic_otel import semconv
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    LLMEndEvent,
    LLMStartEvent,
    TextDeltaEvent,
)
from symfonic_otel.testing.telemetry import InMemoryTelemetry

TTFC = semconv.CLIENT_TIME_TO_FIRST_CHUNK.name


def _streamed_call(telemetry: InMemoryTelemetry, explicit: float | None) -> list[float]:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r1"))
    handler.llm_start(LLMStartEvent(model="gpt-4o", messages=[], run_id="r1"))
    handler.text_delta(TextDeltaEvent(text="hi", run_id="r1"))
    handler.llm_end(
        LLMEndEvent(model="gpt-4o", output="hi", usage={}, run_id="r1"),
        time_to_first_chunk_s=explicit,
    )
    handler.agent_end(AgentEndEvent("r1", "hi", 1.0, 1))
    return [point.sum for _, point in telemetry.points(TTFC)]  # type: ignore[union-attr]


def test_the_adapter_s_time_to_first_chunk_wins_over_the_measured_one(
    telemetry: InMemoryTelemetry,
) -> None:
    assert _streamed_call(telemetry, 7.5) == [7.5]


def test_without_one_the_measured_time_to_first_chunk_is_recorded(
    telemetry: InMemoryTelemetry,
) -> None:
    [measured] = _streamed_call(telemetry, None)
    assert measured == pytest.approx(0.0, abs=1.0)
