"""Readers of Haystack ``ChatMessage`` objects and the Agent's result, by structure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from symfonic_otel.framework_runs import Turn

__all__ = ["answer_of", "model_of", "turn_of", "usage_of"]

_MAX_MESSAGES: Final = 64
_ASSISTANT: Final = "assistant"  # ChatRole values (a str enum)
_TOOL: Final = "tool"
_USAGE_KEYS: Final = (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens"))


def _replies(output: object) -> list[Any]:
    replies = output.get("replies") if isinstance(output, Mapping) else None
    return list(replies[:_MAX_MESSAGES]) if isinstance(replies, list) else []


def _meta(message: object) -> Mapping[str, Any]:
    meta = getattr(message, "meta", None)
    return meta if isinstance(meta, Mapping) else {}


def turn_of(output: object) -> Turn | None:
    """The model's reply (a chat generator's ``{"replies": [...]}``): texts, tool calls, finish."""
    replies = _replies(output)
    if not replies:
        return None
    texts = [text for m in replies if isinstance(text := getattr(m, "text", None), str)]
    calls = sum(len(getattr(m, "tool_calls", None) or ()) for m in replies)
    return Turn.of(texts, calls, _meta(replies[-1]).get("finish_reason"))


def model_of(output: object) -> str:
    for message in _replies(output):
        model = _meta(message).get("model")
        if isinstance(model, str) and model:
            return model[:128]
    return ""


def usage_of(output: object) -> dict[str, int]:
    totals = {"input_tokens": 0, "output_tokens": 0}
    seen = False
    for message in _replies(output):
        usage = _meta(message).get("usage")
        if not isinstance(usage, Mapping):
            continue
        for ours, theirs in _USAGE_KEYS:
            value = usage.get(theirs)
            if isinstance(value, int) and not isinstance(value, bool):
                totals[ours] += value
                seen = True
    return totals if seen else {}


def answer_of(result: object) -> tuple[str | None, str | None]:
    """(``exit_reason``, answer text) of an Agent's result: the last message's text when the
    model wrote it, a tool exit condition's result when a tool did; None for any other last
    message (a hook stopped the run before the model spoke: the question is no answer)."""
    if not isinstance(result, Mapping):
        return None, None
    exit_reason = result.get("exit_reason")
    last = result.get("last_message")
    role = getattr(last, "role", None)
    text: object = None
    if role == _ASSISTANT:
        text = getattr(last, "text", None)
    elif role == _TOOL:
        text = getattr(getattr(last, "tool_call_result", None), "result", None)
    return (
        exit_reason if isinstance(exit_reason, str) else None,
        text if isinstance(text, str) else None,
    )
