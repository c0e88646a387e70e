"""What the smolagents adapter reads of a step beyond its verdict: the agent's name on each of
its model calls, a zero timestamp as no time at all, only the text parts of a message, and a
final-answer step with no model output as no failed model call."""

from __future__ import annotations

import pytest

pytest.importorskip("smolagents", reason="needs the smolagents extra")

from smolagents.memory import ActionStep  # type: ignore[import-untyped]
from smolagents.monitoring import Timing  # type: ignore[import-untyped]

from symfonic_otel import semconv
from symfonic_otel.smolagents import SymfonicSmolagents, steps
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.smolagents_support import agent, answering, run


def test_each_model_call_names_the_agent_that_made_it(telemetry: InMemoryTelemetry) -> None:
    adapter = SymfonicSmolagents(telemetry.handler())
    built, _ = agent("tool_calling", answering(tool_turns=1), adapter.step_callbacks())
    run(built)
    chats = [s.attributes or {} for s in telemetry.spans() if s.name.startswith("chat")]
    assert len(chats) == 2
    assert all(chat[semconv.GEN_AI_AGENT_NAME] == "helper" for chat in chats)


@pytest.mark.parametrize(("stamp", "expected"), [(0, None), (0.0, None), (1.5, 1_500_000_000)])
def test_a_zero_timestamp_is_no_time_and_seconds_become_nanoseconds(
    stamp: float, expected: int | None
) -> None:
    assert steps.seconds_ns(stamp) == expected


def test_only_the_text_parts_of_a_message_are_its_text() -> None:
    content = [
        {"type": "text", "text": "It is "},
        {"type": "image_url", "text": "an image's caption", "image_url": "x"},
        {"type": "text", "text": "sunny."},
    ]
    assert steps.text_of(content) == "It is sunny."


def test_a_final_answer_step_without_model_output_is_no_failed_model_call() -> None:
    final = ActionStep(step_number=1, timing=Timing(start_time=1.0), is_final_answer=True)
    assert not steps.model_raised(final)
    assert steps.model_raised(ActionStep(step_number=1, timing=Timing(start_time=1.0)))
