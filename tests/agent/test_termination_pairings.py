"""Termination rules that meet on one turn: which wins, and which stop reason a refusal keeps.

A turn that repeats a call for the threshold-th time on the last allowed model call ends the run
as a loop (the more specific rule), not at the call cap. An OpenAI refusal counts as ``refusal``
only on a turn that stopped normally (``stop`` or no value): a refusal text on a turn cut at the
output limit keeps ``max_tokens``.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from symfonic_otel.agent import FrameworkConfig
from symfonic_otel.agent.termination import (
    incomplete_reason,
    normalize_stop_reason,
    tools_condition,
)
from tests.support.agent_support import call


def _repeating(times: int) -> list[BaseMessage]:
    messages: list[BaseMessage] = [HumanMessage(content="q")]
    for index in range(times):
        messages.append(
            AIMessage(
                content="",
                tool_calls=[call("add", {"a": 1}, f"c{index}")],
                response_metadata={"finish_reason": "tool_calls"},
            )
        )
        if index < times - 1:
            messages.append(ToolMessage(content="2", tool_call_id=f"c{index}", name="add"))
    return messages


def test_a_loop_on_the_last_allowed_call_ends_as_a_loop_not_at_the_cap() -> None:
    config = FrameworkConfig(recursion_limit=3, loop_detection_threshold=3)
    route = tools_condition(_repeating(3), config, model_calls=3)
    assert (route.action, route.reason) == ("finish", "loop_detected")


def test_the_cap_alone_ends_at_the_recursion_limit() -> None:
    config = FrameworkConfig(recursion_limit=2, loop_detection_threshold=3)
    route = tools_condition(_repeating(2), config, model_calls=2)
    assert (route.action, route.reason) == ("finish", "recursion_limit")


def test_a_refusal_on_a_normally_stopped_turn_is_a_refusal() -> None:
    message = AIMessage(
        content="",
        additional_kwargs={"refusal": "I can't"},
        response_metadata={"finish_reason": "stop"},
    )
    assert normalize_stop_reason(message) == "refusal"


def test_a_refusal_text_on_a_turn_cut_at_the_limit_keeps_max_tokens() -> None:
    message = AIMessage(
        content="",
        additional_kwargs={"refusal": "I can't"},
        response_metadata={"finish_reason": "length"},
    )
    assert normalize_stop_reason(message) == "max_tokens"


def test_an_incomplete_response_with_a_blank_reason_is_incomplete() -> None:
    metadata = {"status": "incomplete", "incomplete_details": {"reason": ""}}
    assert incomplete_reason(metadata) == "incomplete"
    assert incomplete_reason({"status": "completed"}) is None
