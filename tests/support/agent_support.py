"""Shared helpers for the reference-loop tests: scripted turns, tools, an event recorder."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool

from symfonic_otel.testing.scripted import ScriptedCall


def call(name: str, args: dict[str, Any] | None = None, call_id: str = "c1") -> dict[str, Any]:
    return {"name": name, "args": args or {}, "id": call_id, "type": "tool_call"}


def invalid_call(call_id: str, args: str, error: str, name: str = "add") -> dict[str, Any]:
    """A tool call whose arguments the provider adapter could not parse (``invalid_tool_calls``)."""
    return {"name": name, "args": args, "id": call_id, "error": error, "type": "invalid_tool_call"}


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


def _records(kind: str) -> Callable[[Recorder, Any], None]:
    def record(self: Recorder, event: Any) -> None:
        self.events.append((kind, event))

    return record


def _records_async(kind: str) -> Callable[[Recorder, Any], Coroutine[Any, Any, None]]:
    async def record(self: Recorder, event: Any) -> None:
        self.events.append((kind, event))

    return record


class Recorder:
    """A duck-typed handler recording every event; async and sync methods mixed on purpose."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    on_agent_start = _records_async("agent_start")
    on_agent_end = _records("agent_end")
    on_llm_end = _records_async("llm_end")
    on_react_loop_end = _records("react_loop_end")
    on_fabrication_detected = _records_async("fabrication_detected")

    def of(self, kind: str) -> list[Any]:
        return [event for name, event in self.events if name == kind]

    def kinds(self) -> list[str]:
        return [name for name, _ in self.events]


class FullRecorder(Recorder):
    """``Recorder`` plus every other Symfonic event the loop emits (nodes, tools, text, LLM start).

    A separate class so the tests written for the five events keep a handler without the new
    methods: the duck typing of the dispatcher is exercised both ways.
    """

    on_llm_start = _records("llm_start")
    on_node_start = _records_async("node_start")
    on_node_end = _records("node_end")
    on_node_error = _records_async("node_error")
    on_tool_call_start = _records_async("tool_call_start")
    on_tool_result = _records("tool_result")
    on_text_delta = _records("text_delta")

    def sequence(self, *, deltas: bool = False) -> list[str]:
        """Event kinds with the node or tool they concern: ``node_start:react``, ``tool_result:c1``.

        Text deltas are left out unless asked for (their number depends on chunking).
        """
        out: list[str] = []
        for kind, event in self.events:
            if kind == "text_delta" and not deltas:
                continue
            if kind.startswith("node_"):
                out.append(f"{kind}:{event.node_name}")
            elif kind == "tool_call_start":
                out.append(f"{kind}:{event.phase}:{event.tool_call_id}")
            elif kind == "tool_result":
                out.append(f"{kind}:{event.tool_call_id}")
            else:
                out.append(kind)
        return out


def pairing_problems(events: Sequence[tuple[str, Any]]) -> list[str]:
    """Violations of the pairing rules of a run's events, [] when they hold.

    Every NodeStart is closed by exactly one NodeEnd or NodeError of the same node before the
    next node starts (the loop's nodes do not nest); every ``executing`` ToolCallStart is
    followed by exactly one ToolResult with its ``tool_call_id``, inside the ``tools`` node; no
    result without a start; everything between the run's AgentStart and AgentEnd, one run id.
    """
    problems: list[str] = []
    open_node: str | None = None
    open_calls: set[str] = set()
    closed_calls: set[str] = set()
    kinds = [kind for kind, _ in events]
    if not kinds or kinds[0] != "agent_start" or kinds[-1] != "agent_end":
        problems.append(f"the run is not framed by agent_start ... agent_end: {kinds}")
    run_ids = {getattr(event, "run_id", None) for _, event in events}
    if len(run_ids) != 1:
        problems.append(f"events of several runs: {run_ids}")
    for kind, event in events:
        if kind == "node_start":
            if open_node is not None:
                problems.append(f"node {event.node_name} starts inside {open_node}")
            open_node = event.node_name
        elif kind in ("node_end", "node_error"):
            if open_node != event.node_name:
                problems.append(f"{kind} of {event.node_name} closes {open_node}")
            if open_calls:
                problems.append(f"node {event.node_name} closed with open calls {open_calls}")
            open_node = None
        elif kind == "tool_call_start" and event.phase == "executing":
            if open_node != "tools":
                problems.append(f"call {event.tool_call_id} executes outside the tools node")
            if event.tool_call_id in open_calls | closed_calls:
                problems.append(f"call {event.tool_call_id} started twice")
            open_calls.add(event.tool_call_id)
        elif kind == "tool_result":
            if event.tool_call_id not in open_calls:
                problems.append(f"result {event.tool_call_id} has no open start")
            open_calls.discard(event.tool_call_id)
            closed_calls.add(event.tool_call_id)
        elif kind in ("llm_start", "llm_end", "text_delta") and open_node is None:
            problems.append(f"{kind} outside a node")
    if open_node is not None:
        problems.append(f"node {open_node} never closed")
    if open_calls:
        problems.append(f"calls never answered: {open_calls}")
    return problems


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
