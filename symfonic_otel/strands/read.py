"""Readers of Strands messages (``{"role", "content": [blocks], "metadata"}``), by structure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from symfonic_otel.invocation import Turn, token_counts

__all__ = ["message_text", "turn_of", "usage_of"]

_MAX_BLOCKS: Final = 256


def _blocks(message: object) -> list[Any]:
    content = message.get("content") if isinstance(message, Mapping) else None
    return list(content[:_MAX_BLOCKS]) if isinstance(content, list) else []


def _texts(message: object) -> list[str]:
    return [
        text
        for block in _blocks(message)
        if isinstance(block, Mapping) and isinstance(text := block.get("text"), str)
    ]


def message_text(message: object) -> str | None:
    """An assistant message's text; ``None`` for any other role (a tool-result turn)."""
    if not isinstance(message, Mapping) or message.get("role") != "assistant":
        return None
    return "".join(_texts(message))


def turn_of(message: object, stop_reason: object) -> Turn:
    calls = sum(1 for b in _blocks(message) if isinstance(b, Mapping) and "toolUse" in b)
    return Turn.of(_texts(message), calls, stop_reason if isinstance(stop_reason, str) else None)


def usage_of(message: object) -> dict[str, int]:
    metadata = message.get("metadata") if isinstance(message, Mapping) else None
    usage = metadata.get("usage") if isinstance(metadata, Mapping) else None
    return token_counts(usage, "inputTokens", "outputTokens")
