"""Readers of Agent Framework responses (``ChatResponse``, ``AgentResponse``), by structure."""

from __future__ import annotations

from typing import Any, Final

from symfonic_otel.invocation import Turn, token_counts

__all__ = ["response_text", "turn_of", "usage_of"]

_MAX_CONTENTS: Final = 1024


def _contents(response: object) -> list[Any]:
    contents: list[Any] = []
    for message in getattr(response, "messages", None) or []:
        if getattr(message, "role", None) == "assistant":
            contents.extend(getattr(message, "contents", None) or [])
    return contents[:_MAX_CONTENTS]


def _texts(response: object) -> list[str]:
    return [
        text
        for c in _contents(response)
        if getattr(c, "type", None) == "text" and isinstance(text := getattr(c, "text", None), str)
    ]


def turn_of(response: object) -> Turn:
    """One model call's response: its text, its function calls, the provider's finish reason."""
    calls = sum(1 for c in _contents(response) if getattr(c, "type", None) == "function_call")
    return Turn.of(_texts(response), calls, getattr(response, "finish_reason", None))


def response_text(response: object) -> str | None:
    """An agent response's answer: its assistant text."""
    return None if response is None else "".join(_texts(response))


def usage_of(response: object) -> dict[str, int]:
    usage = getattr(response, "usage_details", None)
    return token_counts(usage, "input_token_count", "output_token_count")
