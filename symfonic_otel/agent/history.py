"""History repair: every assistant tool call has exactly one tool result, right after it.

Providers reject a request whose history has a tool call without a result, or a result without
its call. The loop keeps that invariant itself, but histories also come from callers, from
interrupted runs and from trimming, so the whole history is repaired before every model call:
results that answer no pending call (orphans, duplicates, results separated from their call) are
dropped, and every unanswered call gets a placeholder result saying why there is none. Assistant
messages are never modified.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

__all__ = [
    "INTERRUPTED",
    "MISSING_RESULT",
    "NOT_RUN",
    "call_ids",
    "history_is_valid",
    "repair_history",
]

MISSING_RESULT: Final = "[no result: this tool call has no recorded result]"
INTERRUPTED: Final = "[interrupted: the run was stopped before this tool call completed]"
NOT_RUN: Final = "[not run: the agent finished before executing this tool call]"


def call_ids(message: BaseMessage) -> list[str]:
    """Ids of the tool calls an assistant message made (valid and unparseable ones)."""
    if not isinstance(message, AIMessage):
        return []
    ids: list[str] = []
    for group in (message.tool_calls, message.invalid_tool_calls):
        for call in group:
            call_id = call.get("id") if isinstance(call, Mapping) else None
            if call_id:
                ids.append(call_id)
    return ids


def _placeholder(call_id: str, content: str) -> ToolMessage:
    # No tool name on purpose: a result labelled with the real tool would read as a real result.
    return ToolMessage(content=content, tool_call_id=call_id, status="error")


def repair_history(messages: list[BaseMessage], placeholder: str = MISSING_RESULT) -> bool:
    """Repair ``messages`` in place; True when anything changed.

    Results follow their call in call order; a result is kept only if it directly follows (in
    the run of tool messages after) the assistant message that made the call.
    """
    repaired: list[BaseMessage] = []
    pending: list[str] = []
    results: dict[str, ToolMessage] = {}

    def flush() -> None:
        for call_id in pending:
            result = results.get(call_id)
            repaired.append(result if result is not None else _placeholder(call_id, placeholder))
        pending.clear()
        results.clear()

    for message in messages:
        if isinstance(message, ToolMessage):
            call_id = message.tool_call_id
            if call_id in pending and call_id not in results:
                results[call_id] = message
            continue
        flush()
        repaired.append(message)
        ids = call_ids(message)
        if ids:
            # A repeated id within one message can only be answered once.
            pending.extend(dict.fromkeys(ids))
    flush()

    if len(repaired) == len(messages) and all(
        a is b for a, b in zip(repaired, messages, strict=True)
    ):
        return False
    messages[:] = repaired
    return True


def history_is_valid(messages: list[BaseMessage]) -> bool:
    """True when repair would change nothing (each call answered once, right after it)."""
    return not repair_history(list(messages))
