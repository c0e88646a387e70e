"""Shared helpers for the reference-loop tests: scripted turns, tools, an event recorder."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool

from symfonic_otel.testing.scripted import ScriptedCall


def call(name: str, args: dict[str, Any] | None = None, call_id: str = "c1") -> dict[str, Any]:
    return {"name": name, "args": args or {}, "id": call_id, "type": "tool_call"}


def turn(
    content: str | list[Any] = "",
    *calls: dict[str, Any],
    finish: str | None = None,
    stop: str | None = None,
    usage: tuple[int, int] | None = None,
    model: str | None = None,
    **extra: Any,
) -> AIMessage:
    """An AIMessage as a provider adapter returns it (OpenAI ``finish`` or Anthropic ``stop``)."""
    metadata: dict[str, Any] = {}
    if finish is not None:
        metadata["finish_reason"] = finish
    if stop is not None:
        metadata["stop_reason"] = stop
    if model is not None:
        metadata["model_name"] = model
    kwargs: dict[str, Any] = {}
    if usage is not None:
        kwargs["usage_metadata"] = {
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        }
    return AIMessage(
        content=content, tool_calls=list(calls), response_metadata=metadata, **kwargs, **extra
    )


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def lookup(key: str) -> str:
    """Look a key up in the catalogue."""
    return f"value-of-{key}"


@tool
def explode(reason: str) -> str:
    """A tool that always fails."""
    raise ValueError(f"cannot do {reason}")


TOOLS = (add, lookup, explode)


class Recorder:
    """A duck-typed handler recording every event; async and sync methods mixed on purpose."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    async def on_agent_start(self, event: Any) -> None:
        self.events.append(("agent_start", event))

    def on_agent_end(self, event: Any) -> None:
        self.events.append(("agent_end", event))

    async def on_llm_end(self, event: Any) -> None:
        self.events.append(("llm_end", event))

    def on_react_loop_end(self, event: Any) -> None:
        self.events.append(("react_loop_end", event))

    async def on_fabrication_detected(self, event: Any) -> None:
        self.events.append(("fabrication_detected", event))

    def of(self, kind: str) -> list[Any]:
        return [event for name, event in self.events if name == kind]

    def kinds(self) -> list[str]:
        return [name for name, _ in self.events]


def unanswered_calls(messages: Sequence[BaseMessage]) -> list[str]:
    """Violations of the history invariant: every call answered exactly once, right after it."""
    problems: list[str] = []
    pending: list[str] = []
    answered: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in pending:
                problems.append(f"result {message.tool_call_id!r} answers no pending call")
            elif message.tool_call_id in answered:
                problems.append(f"call {message.tool_call_id!r} answered twice")
            answered.add(message.tool_call_id)
            continue
        problems.extend(f"call {c!r} unanswered" for c in pending if c not in answered)
        pending, answered = [], set()
        if isinstance(message, AIMessage):
            pending = [c["id"] or "" for c in message.tool_calls if c.get("id")]
            pending += [c["id"] or "" for c in message.invalid_tool_calls if c.get("id")]
    problems.extend(f"call {c!r} unanswered" for c in pending if c not in answered)
    return problems


def assert_calls_saw_valid_history(calls: Sequence[ScriptedCall]) -> None:
    for index, recorded in enumerate(calls):
        problems = unanswered_calls(recorded.messages)
        assert not problems, f"model call {index} saw an invalid history: {problems}"


def log_text(structured: Sequence[Mapping[str, Any]], records: Sequence[logging.LogRecord]) -> str:
    """Everything written to the logs, structlog-captured entries and stdlib records alike."""
    parts = [json.dumps(list(structured), default=repr)]
    for record in records:
        parts.append(record.getMessage())
        parts.append(repr(record.__dict__))
    return "\n".join(parts)


def lines_of_kind(
    kind: str, structured: Sequence[Mapping[str, Any]], records: Sequence[logging.LogRecord]
) -> int:
    """How many log lines (either route) report a failure of ``kind``."""
    count = sum(1 for entry in structured if entry.get("kind") == kind)
    count += sum(1 for record in records if kind in repr(record.__dict__))
    return count
