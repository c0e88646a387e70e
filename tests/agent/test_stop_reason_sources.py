"""Where a turn's stop reason comes from, and the routing rules that read a turn's text.

A stop value is read through one of two tables: the provider's (by ``model_provider``, in any
case) or the one its metadata key implies. A Responses API cut has no finish reason at all. The
text-with-tool-calls rule needs real text, and equal tool calls must sign alike whatever the
order of their arguments.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from symfonic_otel.agent import FrameworkConfig
from symfonic_otel.agent.termination import (
    normalize_stop_reason,
    raw_stop_reason,
    tool_call_signature,
    tools_condition,
)

CALL = {"name": "lookup", "args": {"key": "a"}, "id": "call_1", "type": "tool_call"}


def _message(metadata: dict[str, Any], content: str = "", calls: int = 0) -> AIMessage:
    tool_calls = [{**CALL, "id": f"call_{n}"} for n in range(calls)]
    return AIMessage(content=content, tool_calls=tool_calls, response_metadata=metadata)


def test_a_responses_api_cut_without_a_reason_is_reported_as_incomplete() -> None:
    message = _message({"status": "incomplete", "incomplete_details": None})
    assert raw_stop_reason(message) == "incomplete"
    assert normalize_stop_reason(message) == "incomplete"


def test_a_responses_api_cut_at_the_output_limit_is_max_tokens() -> None:
    details = {"reason": "max_output_tokens"}
    message = _message({"status": "incomplete", "incomplete_details": details})
    assert raw_stop_reason(message) == "max_output_tokens"
    assert normalize_stop_reason(message) == "max_tokens"


def test_the_provider_table_wins_over_the_key_and_the_provider_name_is_read_in_any_case() -> None:
    # A Gemini turn written under OpenAI's key: Gemini's STOP, not OpenAI's unknown "STOP".
    for provider in ("google_genai", "Google_GenAI"):
        message = _message({"model_provider": provider, "finish_reason": "STOP"})
        assert normalize_stop_reason(message) == "end_turn"


def test_blank_text_beside_tool_calls_runs_the_tools_even_where_text_ends_the_turn() -> None:
    config = FrameworkConfig(finish_on_text_with_tool_calls="auto")
    metadata = {"model_provider": "openai", "finish_reason": "stop", "model_name": "qwen3-max"}
    with_text = _message(metadata, "The answer is 4.", calls=1)
    blank = _message(metadata, "  ", calls=1)
    query = HumanMessage(content="q")
    assert tools_condition([query, with_text], config, model_calls=1).reason == (
        "end_turn_with_text"
    )
    assert tools_condition([query, blank], config, model_calls=1).action == "tools"


def test_equal_tool_calls_sign_alike_whatever_the_order_of_their_arguments() -> None:
    first = {"name": "lookup", "args": {"a": 1, "b": [1, 2]}}
    second = {"name": "lookup", "args": {"b": [1, 2], "a": 1}}
    assert tool_call_signature(first) == tool_call_signature(second)
    assert tool_call_signature(first) != tool_call_signature({"name": "lookup", "args": {"a": 2}})
