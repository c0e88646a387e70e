"""Readers of ADK's model responses and contents, by structure; they never raise on odd input."""

from __future__ import annotations

import enum
from typing import Any, Final

from symfonic_otel.invocation import Turn, token_counts

__all__ = ["content_text", "finish_reason", "turn_of", "usage_of"]

_MAX_PARTS: Final = 256


def _parts(content: object) -> list[Any]:
    parts = getattr(content, "parts", None)
    return list(parts[:_MAX_PARTS]) if isinstance(parts, list) else []


def content_text(content: object) -> str:
    """The text parts of a ``types.Content`` (thoughts left out), joined."""
    return "".join(
        text
        for part in _parts(content)
        if isinstance(text := getattr(part, "text", None), str)
        and not getattr(part, "thought", None)
    )


def finish_reason(response: object) -> str | None:
    value = getattr(response, "finish_reason", None)
    if isinstance(value, enum.Enum):
        value = value.value
    return value if isinstance(value, str) else None


def turn_of(response: object) -> Turn:
    """A model response's shape: its text, how many function calls it made."""
    parts = _parts(getattr(response, "content", None))
    texts = [
        text
        for part in parts
        if isinstance(text := getattr(part, "text", None), str)
        and not getattr(part, "thought", None)
    ]
    calls = sum(1 for part in parts if getattr(part, "function_call", None) is not None)
    return Turn.of(texts, calls, finish_reason(response))


def usage_of(response: object) -> dict[str, int]:
    usage = getattr(response, "usage_metadata", None)
    return token_counts(usage, "prompt_token_count", "candidates_token_count")
