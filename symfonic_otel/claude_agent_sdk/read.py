"""Readers of Claude Agent SDK messages, by structure (block types, result subtypes, terminal
reasons), never by their text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, Literal

from claude_agent_sdk import AssistantMessage, ResultMessage, TextBlock, ToolUseBlock

from symfonic_otel.invocation import Turn

__all__ = ["CAP_SUBTYPES", "Verdict", "turn_of", "usage_of", "verdict_of"]

# The result subtypes of a run its budget stopped (``max_turns``, ``max_budget_usd``).
CAP_SUBTYPES: Final = frozenset({"error_max_turns", "error_max_budget_usd"})
# Terminal reasons of a turn interrupted by the caller (``ClaudeSDKClient.interrupt``).
_ABORTED: Final = frozenset({"aborted_streaming", "aborted_tools"})
_MAX_BLOCKS: Final = 256

Verdict = Literal["answered", "capped", "error", "cancelled"]


def turn_of(messages: Iterable[AssistantMessage]) -> Turn:
    """One model response: the CLI sends each of its content blocks as a message of its own."""
    texts: list[str] = []
    calls = 0
    finish: str | None = None
    for message in messages:
        for block in message.content[:_MAX_BLOCKS]:
            if isinstance(block, TextBlock):
                texts.append(block.text)
            elif isinstance(block, ToolUseBlock):
                calls += 1
        finish = message.stop_reason or finish
    return Turn.of(texts, calls, finish)


def usage_of(message: AssistantMessage | None) -> dict[str, int]:
    usage = message.usage if message is not None else None
    if not isinstance(usage, Mapping):
        return {}
    return {
        key: value
        for key in ("input_tokens", "output_tokens")
        if isinstance(value := usage.get(key), int) and not isinstance(value, bool)
    }


def verdict_of(result: ResultMessage) -> Verdict:
    if result.subtype in CAP_SUBTYPES:
        return "capped"
    if result.terminal_reason in _ABORTED:
        return "cancelled"
    if result.is_error:
        return "error"
    return "answered"
