"""Guarded readers of LangChain messages: role, content, and the shape of an AI message.

A message can arrive as a ``BaseMessage``, a ``(role, text)`` tuple or a role dict; every reader
here accepts all three and returns the "unknown" default for anything else. The adapter keeps
an AI message's *shape* (blank or not, tool calls, stop reason, id), never its text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Final

from langchain_core.messages import BaseMessage

from symfonic_otel.agent.flatten import content_type, flatten_content_blocks
from symfonic_otel.agent.termination import reported_stop_reason, stop_reasons
from symfonic_otel.events import ContentType

__all__ = [
    "MAX_STOP_REASON",
    "AIShape",
    "ai_message",
    "message_content",
    "message_list",
    "message_role",
    "metadata_view",
]

MAX_STOP_REASON: Final = 64
# Message ids are uuids or ``lc_run--<uuid>-<n>`` in practice; a longer one is cut (and then
# still compares equal to itself, which is all the step-cap verdict needs).
_MAX_MESSAGE_ID: Final = 256
_AI_ROLES: Final = frozenset({"ai", "AIMessageChunk", "assistant"})


@dataclass(frozen=True, slots=True)
class AIShape:
    """What the adapter keeps of an AI message: no text, only what the verdicts need."""

    blank: bool
    content_type: ContentType
    tool_call_count: int
    stop_reason: str
    """Normalised (``end_turn``, ``tool_use``, ...); inferred from the shape without metadata."""
    message_id: str | None = None
    """The message's id: tells a model's output from a message a graph wrote in its place."""


def message_role(message: object) -> str:
    """``human`` / ``ai`` / ... for message objects, ``(role, text)`` tuples and role dicts."""
    if isinstance(message, tuple) and len(message) == 2:
        return str(message[0])
    if isinstance(message, Mapping):
        return str(message.get("role") or message.get("type") or "")
    role = getattr(message, "type", "")
    return role if isinstance(role, str) else ""


def message_content(message: object) -> object:
    if isinstance(message, tuple) and len(message) == 2:
        return message[1]
    if isinstance(message, Mapping):
        return message.get("content")
    return getattr(message, "content", None)


def message_list(value: object) -> Sequence[Any] | None:
    """The message list of a graph state / input, or of a bare message list."""
    if isinstance(value, Mapping):
        value = value.get("messages")
    if isinstance(value, list | tuple) and not (
        isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)
    ):
        return value
    return None


def metadata_view(message: object) -> object:
    """An object with ``response_metadata`` / ``additional_kwargs`` attributes, for dicts too."""
    if isinstance(message, Mapping):
        return SimpleNamespace(
            response_metadata=message.get("response_metadata"),
            additional_kwargs=message.get("additional_kwargs"),
        )
    return message


def _message_id(message: object) -> str | None:
    raw = message.get("id") if isinstance(message, Mapping) else getattr(message, "id", None)
    return raw[:_MAX_MESSAGE_ID] if isinstance(raw, str) and raw else None


def ai_message(message: object) -> tuple[AIShape, str, str | None] | None:
    """(shape, answer text, raw stop value) of an AI message; None for anything else."""
    if isinstance(message, BaseMessage):  # the common case: plain attribute reads
        if message.type not in _AI_ROLES:
            return None
        content: object = message.content
        view: object = message
        tool_calls = getattr(message, "tool_calls", None)
    else:
        if message_role(message) not in _AI_ROLES:
            return None
        content = message_content(message)
        view = metadata_view(message)
        tool_calls = (
            message.get("tool_calls")
            if isinstance(message, Mapping)
            else getattr(message, "tool_calls", None)
        )
    text = flatten_content_blocks(content)
    if text is None:  # OpenAI structured-output refusals carry their text here
        extra = getattr(view, "additional_kwargs", None)
        refusal = extra.get("refusal") if isinstance(extra, Mapping) else None
        text = refusal if isinstance(refusal, str) and refusal else ""
    count = len(tool_calls) if isinstance(tool_calls, list | tuple) else 0
    raw, normalized = stop_reasons(view)
    stop = reported_stop_reason(normalized, count > 0)
    shape = AIShape(
        not text.strip(),
        content_type(content),
        count,
        stop[:MAX_STOP_REASON],
        _message_id(message),
    )
    return shape, text, raw
