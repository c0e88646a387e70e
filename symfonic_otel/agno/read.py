"""Readers of Agno messages (``agno.models.message.Message``), by structure."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from symfonic_otel.invocation import Turn, token_counts

__all__ = ["answer_of", "run_turns", "tool_call_count", "tool_calls_of", "turn_of", "usage_of"]

_MAX_MESSAGES: Final = 4096


def run_turns(messages: object) -> list[Any]:
    """This run's assistant messages (history replayed into the context is not this run's)."""
    if not isinstance(messages, list):
        return []
    return [
        m
        for m in messages[-_MAX_MESSAGES:]
        if getattr(m, "role", None) == "assistant" and not getattr(m, "from_history", False)
    ]


def tool_calls_of(message: object) -> int:
    calls = getattr(message, "tool_calls", None)
    return len(calls) if isinstance(calls, list) else 0


def _text(content: object) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "".join(p for p in parts if isinstance(p, str))
    return None


def turn_of(message: object) -> Turn:
    text = _text(getattr(message, "content", None))
    return Turn.of([text] if text is not None else [], tool_calls_of(message))


def usage_of(message: object) -> dict[str, int]:
    counts = token_counts(getattr(message, "metrics", None), "input_tokens", "output_tokens")
    return {name: value for name, value in counts.items() if value > 0}


def answer_of(content: object) -> str:
    """A run's answer: its text, or a structured output (an answer whatever its text)."""
    text = _text(content)
    if text is not None:
        return text
    return "" if content is None else "<structured>"


def tool_call_count(turns: Iterable[object]) -> int:
    return sum(tool_calls_of(t) for t in turns)
