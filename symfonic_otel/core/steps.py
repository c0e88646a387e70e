"""Open steps: tool, node and generic call spans between their start and end, bounded.

A run's steps (Symfonic's tool and node events, the model call awaiting its LLMEnd) live on the
run itself, so they go when the run goes; each kind is capped per run (a pending model call keeps
what its events carried only until its LLMEnd or its run's end). Spans an adapter opens through
``start_tool`` / ``start_call`` are tracked in an ``OpenCalls`` table (capped, oldest first out)
that remembers what their end needs: the tenant and tool name of the duration metric.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

MAX_STEPS_PER_RUN: Final = 64
MAX_OPEN_CALLS: Final = 10_000


@dataclass(slots=True, eq=False)
class OpenCall:
    """A started tool, node or generic call span and what its end needs."""

    span: Span
    start_ns: int
    tenant: str
    tool: str | None  # the tool name of ``gen_ai.execute_tool.duration``; None: not a tool


@dataclass(slots=True)
class ModelInputs:
    """What a call's LLMStart / LLMPreCall sent (kept with capture on only), rendered once at its
    LLMEnd by ``call_inputs``. The message lists are shallow copies: what the agent appends to
    its history after the call began is not part of the call."""

    start_messages: tuple[Any, ...] | None = None  # LLMStart: the engine's view
    system_prompt: str = ""
    wire_messages: tuple[Any, ...] | None = None  # LLMPreCall: what the provider receives
    tools: tuple[Any, ...] | None = None


@dataclass(slots=True)
class PendingModelCall:
    """An LLMStart (or LLMPreCall) awaiting its LLMEnd: when it started, when its first chunk
    came, the request parameters of its LLMPreCall and, with capture on, its inputs."""

    start_ns: int
    start_monotonic: float
    first_chunk_s: float | None = None
    request: dict[str, AttributeValue] | None = None
    inputs: ModelInputs | None = None


@dataclass(slots=True, eq=False)
class RunSteps:
    """The open steps of one run, each kind capped at ``MAX_STEPS_PER_RUN``.

    A run's events may come from several threads (parallel tools), hence the lock.
    """

    tools: OrderedDict[str, OpenCall] = field(default_factory=OrderedDict)
    nodes: list[tuple[str, OpenCall]] = field(default_factory=list)  # innermost last
    models: OrderedDict[str, PendingModelCall] = field(default_factory=OrderedDict)
    _unnamed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add_tool(self, key: str, call: OpenCall) -> list[OpenCall]:
        """Track ``call`` under its call id ``key`` (may be ""); returns the calls pushed out
        (one started again under the same id, or the oldest past the cap)."""
        out: list[OpenCall] = []
        with self._lock:
            if not key:  # no id: a key of its own, paired with its result by tool name
                self._unnamed += 1
                key = f"\x00{self._unnamed}"
            previous = self.tools.pop(key, None)
            if previous is not None:
                out.append(previous)
            self.tools[key] = call
            while len(self.tools) > MAX_STEPS_PER_RUN:
                out.append(self.tools.popitem(last=False)[1])
        return out

    def pop_tool(self, key: str, name: str) -> OpenCall | None:
        """The call of ``key``; without a match, the oldest open call of the tool ``name``."""
        with self._lock:
            if key:
                found = self.tools.pop(key, None)
                if found is not None:
                    return found
            for open_key, call in self.tools.items():
                if call.tool == name:
                    del self.tools[open_key]
                    return call
        return None

    def push_node(self, name: str, call: OpenCall) -> list[OpenCall]:
        out: list[OpenCall] = []
        with self._lock:
            self.nodes.append((name, call))
            while len(self.nodes) > MAX_STEPS_PER_RUN:
                out.append(self.nodes.pop(0)[1])
        return out

    def pop_node(self, name: str) -> OpenCall | None:
        """The innermost open node called ``name``."""
        with self._lock:
            for index in range(len(self.nodes) - 1, -1, -1):
                if self.nodes[index][0] == name:
                    return self.nodes.pop(index)[1]
        return None

    def innermost_node(self) -> Span | None:
        with self._lock:
            return self.nodes[-1][1].span if self.nodes else None

    def start_model(self, node: str, pending: PendingModelCall) -> None:
        with self._lock:
            self.models.pop(node, None)
            self.models[node] = pending
            while len(self.models) > MAX_STEPS_PER_RUN:
                self.models.popitem(last=False)

    def model(self, node: str) -> PendingModelCall | None:
        """The pending call at ``node``; with no node named, the latest one."""
        with self._lock:
            if node:
                return self.models.get(node)
            return next(reversed(self.models.values()), None)

    def model_at(self, node: str) -> PendingModelCall | None:
        """The pending call at exactly ``node`` (``""`` included)."""
        with self._lock:
            return self.models.get(node)

    def model_or_start(self, node: str) -> PendingModelCall:
        """The pending call at exactly ``node``, or one started now (an LLMPreCall that came
        without its LLMStart)."""
        with self._lock:
            pending = self.models.get(node)
            if pending is None:
                pending = self.models[node] = PendingModelCall(time.time_ns(), time.monotonic())
                while len(self.models) > MAX_STEPS_PER_RUN:
                    self.models.popitem(last=False)
            return pending

    def pop_model(self, node: str) -> PendingModelCall | None:
        with self._lock:
            return self.models.pop(node, None)

    def drain(self) -> list[OpenCall]:
        """Every open tool and node call (innermost nodes first); the state is cleared."""
        with self._lock:
            calls = list(self.tools.values()) + [call for _, call in reversed(self.nodes)]
            self.tools.clear()
            self.nodes.clear()
            self.models.clear()
        return calls


class OpenCalls:
    """Spans started through the adapter API, by span identity, at most ``cap`` at a time."""

    def __init__(self, cap: int = MAX_OPEN_CALLS) -> None:
        self._cap = cap
        self._calls: OrderedDict[int, OpenCall] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, call: OpenCall) -> None:
        with self._lock:
            self._calls[id(call.span)] = call  # the entry holds the span: its id stays unique
            while len(self._calls) > self._cap:
                self._calls.popitem(last=False)  # its end still works, without the metric

    def pop(self, span: Span) -> OpenCall | None:
        with self._lock:
            call = self._calls.get(id(span))
            if call is None or call.span is not span:
                return None
            del self._calls[id(span)]
            return call

    def __len__(self) -> int:
        return len(self._calls)
