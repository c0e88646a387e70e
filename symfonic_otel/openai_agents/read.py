"""Readers of the Agents SDK's span data: a model turn's shape and usage, a run's error.

Everything here reads by structure and never raises on an odd payload: a model's output is a
chat-completions message (``content`` / ``tool_calls``), a Responses-API item list (``message``
items with ``output_text`` parts, ``function_call`` items) or a ``Response`` object holding one;
the SDK's span errors are ``{"message", "data"}`` mappings whose *data keys* say what stopped the
run (``max_turns`` for the turn budget, ``guardrail`` for a tripwire), never their message text.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Final, Literal

from symfonic_otel.invocation import Turn
from symfonic_otel.read.sanitise import parse_utc_ns

__all__ = ["RunError", "model_name", "output_shape", "raised_type", "run_error", "time_ns", "usage"]

RunError = Literal["max_turns", "guardrail", "error"]

# Bounds on what is read of one model output (a hostile or huge payload costs no more).
_MAX_ITEMS: Final = 256
_MAX_TEXT_CHARS: Final = 65_536
# Item types of a model's own tool requests (function, hosted and computer tools, handoffs).
_TOOL_ITEM_SUFFIX: Final = "_call"


def _get(item: object, name: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def _items(value: object) -> list[object]:
    if isinstance(value, list | tuple):
        return list(value[:_MAX_ITEMS])
    return []


class _Reader:
    """Accumulates text and tool calls over the output's items, within the bounds."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.tool_calls = 0
        self.has_text = False
        self.finish: str | None = None

    def text(self, value: object) -> None:
        if isinstance(value, str):
            self.has_text = True
            room = _MAX_TEXT_CHARS - self.size
            if room > 0:
                self.parts.append(value[:room])
                self.size += min(len(value), room)

    def chat_message(self, message: object) -> None:
        content = _get(message, "content")
        if isinstance(content, str):
            self.text(content)
        else:
            for part in _items(content):
                if _get(part, "type") in ("text", "output_text"):
                    self.text(_get(part, "text"))
        self.tool_calls += len(_items(_get(message, "tool_calls")))

    def response_item(self, item: object) -> None:
        kind = _get(item, "type")
        if kind == "message":
            for part in _items(_get(item, "content")):
                if _get(part, "type") == "output_text":
                    self.text(_get(part, "text"))
        elif isinstance(kind, str) and kind.endswith(_TOOL_ITEM_SUFFIX):
            self.tool_calls += 1

    def response(self, response: object) -> None:
        for item in _items(_get(response, "output")):
            self.response_item(item)
        details = _get(response, "incomplete_details")
        reason = _get(details, "reason") if details is not None else None
        if isinstance(reason, str):
            self.finish = reason

    def shape(self) -> Turn:
        finish = self.finish or ("tool_calls" if self.tool_calls else "stop")
        return Turn("".join(self.parts), self.tool_calls, self.has_text, finish)


def output_shape(output: object, response: object = None) -> Turn | None:
    """The shape of a generation's ``output`` or a response span's ``response``; None when
    neither was recorded (the SDK leaves them out without ``trace_include_sensitive_data``)."""
    reader = _Reader()
    if response is not None:
        reader.response(response)
        return reader.shape()
    entries = _items(output)
    if not isinstance(output, list | tuple):
        return None
    for entry in entries:
        if _get(entry, "output") is not None and _get(entry, "type") is None:
            reader.response(entry)  # a ``Response.model_dump()``
        elif _get(entry, "type") is not None and _get(entry, "role") is None:
            reader.response_item(entry)
        else:
            reader.chat_message(entry)
    return reader.shape()


def _count(raw: Mapping[Any, Any], *keys: str) -> int | None:
    for name in keys:
        value = raw.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def usage(*sources: object) -> dict[str, int]:
    """Token counts from the span's ``usage`` dict, else the response's usage object."""
    for source in sources:
        raw: object = source
        if raw is not None and not isinstance(raw, Mapping):
            dump = getattr(raw, "model_dump", None)
            raw = dump() if callable(dump) else None
        if not isinstance(raw, Mapping):
            continue
        found = {
            "input_tokens": _count(raw, "input_tokens", "prompt_tokens"),
            "output_tokens": _count(raw, "output_tokens", "completion_tokens"),
        }
        if any(value is not None for value in found.values()):
            return {name: value for name, value in found.items() if value is not None}
    return {}


def model_name(data: object) -> str:
    """A generation's ``model``, else the model a response names."""
    model = _get(data, "model")
    if not isinstance(model, str) or not model:
        model = _get(_get(data, "response"), "model")
    return model if isinstance(model, str) else ""


def run_error(error: object) -> RunError | None:
    """What a span error on a run's task / agent / turn span says stopped the run."""
    if not isinstance(error, Mapping):
        return None
    data = error.get("data")
    if isinstance(data, Mapping):
        if "max_turns" in data:
            return "max_turns"
        if "guardrail" in data:
            return "guardrail"
    return "error"


def raised_type() -> str | None:
    """The class name of the exception the SDK is propagating while it ends a failed span: its
    span errors carry only a message, but it ends a run's spans inside the exception's unwinding."""
    raised = sys.exc_info()[1]
    return type(raised).__name__ if isinstance(raised, Exception) else None


def time_ns(stamp: object) -> int | None:
    """An SDK span's ``started_at`` / ``ended_at`` (ISO-8601) as epoch nanoseconds."""
    return parse_utc_ns(stamp) if isinstance(stamp, str) else None
