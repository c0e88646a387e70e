"""Readers of Semantic Kernel chat messages and request settings, by structure (content types,
the function choice behaviour's attempt count), never by their text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from semantic_kernel.contents import FunctionCallContent, FunctionResultContent, TextContent
from semantic_kernel.contents.streaming_text_content import StreamingTextContent

from symfonic_otel.invocation import Turn

__all__ = ["attempt_cap", "message_with", "results_text", "turn_of", "usage_of"]

_MAX_ITEMS: Final = 256


def _items(message: object) -> list[Any]:
    items = getattr(message, "items", None)
    return list(items[:_MAX_ITEMS]) if isinstance(items, list) else []


def texts_of(message: object) -> list[str]:
    return [
        item.text
        for item in _items(message)
        if isinstance(item, (TextContent, StreamingTextContent)) and isinstance(item.text, str)
    ]


def calls_in(message: object) -> int:
    return sum(1 for item in _items(message) if isinstance(item, FunctionCallContent))


def turn_of(messages: Iterable[object]) -> Turn:
    """One model response, from its message (or a streamed response's chunks)."""
    texts: list[str] = []
    calls = 0
    finish: object = None
    for message in messages:
        texts.extend(texts_of(message))
        calls += calls_in(message)
        reason = getattr(message, "finish_reason", None)
        finish = getattr(reason, "value", reason) if reason is not None else finish
    return Turn.of(texts, calls, finish if isinstance(finish, str) else None)


def results_text(messages: Iterable[object]) -> str | None:
    """The function results a filter's ``terminate`` ended the loop on (bounded); ``None`` when
    the messages hold none (a model's reply)."""
    results = [
        item.result
        for message in messages
        for item in _items(message)
        if isinstance(item, FunctionResultContent)
    ]
    if not results:
        return None
    return "".join(str(result) for result in results if result is not None)[:65_536]


def usage_of(messages: Iterable[object]) -> dict[str, int]:
    """Token counts from the messages' ``metadata["usage"]`` (``CompletionUsage``), summed."""
    totals: dict[str, int] = {}
    for message in messages:
        metadata = getattr(message, "metadata", None)
        usage = metadata.get("usage") if isinstance(metadata, Mapping) else None
        for ours, theirs in (
            ("input_tokens", "prompt_tokens"),
            ("output_tokens", "completion_tokens"),
        ):
            value = getattr(usage, theirs, None)
            if isinstance(value, int) and not isinstance(value, bool):
                totals[ours] = totals.get(ours, 0) + value
    return totals


def message_with(history: object, call: object) -> object | None:
    """The assistant message of ``history`` that holds the function call ``call``."""
    messages = getattr(history, "messages", None)
    if not isinstance(messages, list) or call is None:
        return None
    found: object | None = None
    for message in reversed(messages[-_MAX_ITEMS:]):
        if any(item is call for item in _items(message)):
            found = message
            break
    return found


def attempt_cap(settings: object) -> int | None:
    """The request's ``maximum_auto_invoke_attempts`` (``None`` when nothing auto-invokes)."""
    behavior = getattr(settings, "function_choice_behavior", None)
    cap = getattr(behavior, "maximum_auto_invoke_attempts", None)
    return cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else None
