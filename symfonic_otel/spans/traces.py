"""What the processor remembers of open spans until their runs are judged: flags, never spans.

Spans end children first, so each ended span hands what it saw up to its parent: ``Pending``,
kept by the parent's (trace id, span id) until the parent ends. A model call hands up its
verdict; an agent span turns what its subtree handed it into an ``AgentRun`` (judged on its own
model calls) and hands that up; a local root (no parent, or a remote one) ends the chain, and
the runs under it are counted. So a run is an agent invocation, and two requests in one
upstream trace (two local roots) are two runs.

Each open parent costs a fixed few dozen bytes plus its pending runs (at most
``MAX_PENDING_RUNS``), and the table is bounded twice: by count (the oldest is evicted past
``max_open``) and by age (older than ``ttl_s``, evicted at the next span or metric collection).
An evicted parent's runs are still counted, on what they saw. Ended spans are remembered (ids
only, bounded) so that a span ending after its parent, or delivered twice, opens no second run.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Final

from symfonic_otel.core.loops import MAX_SIGNATURES
from symfonic_otel.spans.reading import Output

# Runs held by one open span before they are counted early (their tenant and their parent's
# verdict are then decided on what is known): memory stays bounded per open run.
MAX_PENDING_RUNS: Final = 64
# Ended span ids remembered per open span allowed.
_DONE_PER_OPEN: Final = 4

SpanKey = tuple[int, int]  # (trace id, span id)


@dataclass(slots=True, eq=False)
class Calls:
    """Model calls folded in: how many, and the last one to end; tool calls whose spans record
    their arguments, counted per (tool name, hash of the arguments)."""

    count: int = 0
    last_end: int = -1
    last_output: Output = Output.UNKNOWN
    last_finish: str | None = None
    tools: dict[tuple[str, int], int] | None = None

    def tool(self, call: tuple[str, int], count: int = 1) -> None:
        tools = self.tools
        if tools is None:
            tools = self.tools = {}
        if call in tools or len(tools) < MAX_SIGNATURES:
            tools[call] = tools.get(call, 0) + count

    def chat(self, end: int, output: Output, finish: str | None, count: int = 1) -> None:
        self.count += count
        if end >= self.last_end:
            self.last_end, self.last_output, self.last_finish = end, output, finish

    def merge(self, other: Calls) -> None:
        self.chat(other.last_end, other.last_output, other.last_finish, other.count)
        if other.tools:
            for call, count in other.tools.items():
                self.tool(call, count)


@dataclass(slots=True, eq=False)
class Tenant:
    value: str | None = None
    rank: int = 1 << 30  # index of the attribute it came from: lower is preferred

    def offer(self, rank: int, value: str | None) -> None:
        if value is not None and rank < self.rank:
            self.rank, self.value = rank, value


@dataclass(slots=True, eq=False)
class AgentRun:
    """One agent invocation, judged on its own model calls (a sub-run's answer stands for one
    call of its parent)."""

    calls: Calls
    nested: bool  # names an invocation wherever it sits (see ``SpanReading.nested``)
    name: str | None
    start: int
    end: int
    link: SpanKey
    tenant: Tenant
    failed: bool = False
    step_cap: bool = False  # a step-cap error recorded in the run (not by a sub-run)
    inherited_cap: bool = False  # a capped sub-run's error, seen again on this run
    capped_below: bool = False  # a run inside this one was capped
    final_end: int = -1
    final_output: Output = Output.UNKNOWN

    def answer(self, end: int, output: Output) -> None:
        if output is not Output.UNKNOWN and end >= self.final_end:
            self.final_end, self.final_output = end, output


@dataclass(slots=True, eq=False)
class Pending:
    """What an open span's ended descendants handed up, up to (not into) the runs below it."""

    created: float = field(default_factory=time.monotonic)
    calls: Calls = field(default_factory=Calls)
    step_cap: bool = False  # a span that is no run recorded a step-cap error
    ours: bool = False  # a span of this package's own handler: that handler counts the run
    tenant: Tenant = field(default_factory=Tenant)
    runs: list[AgentRun] = field(default_factory=list)  # directly below: not yet placed
    placed: list[AgentRun] = field(default_factory=list)  # sub-runs: counted at the root

    def merge(self, other: Pending) -> None:
        self.calls.merge(other.calls)
        self.step_cap = self.step_cap or other.step_cap
        self.ours = self.ours or other.ours
        self.tenant.offer(other.tenant.rank, other.tenant.value)
        self.runs.extend(other.runs)
        self.placed.extend(other.placed)

    def all_runs(self) -> list[AgentRun]:
        return [*self.placed, *self.runs]


def _overflow(held: Pending) -> list[Pending]:
    """Runs past ``MAX_PENDING_RUNS`` under one open span, oldest first: to be counted now."""
    excess = len(held.placed) + len(held.runs) - MAX_PENDING_RUNS
    if excess < 1:  # none past the bound
        return []
    early = held.placed[:excess]
    del held.placed[:excess]
    rest = excess - len(early)  # >= 0: what ``placed`` could not cover comes from ``runs``
    early.extend(held.runs[:rest])
    del held.runs[:rest]
    return [Pending(ours=held.ours, placed=early)]


class SpanTable:
    """Open spans' ``Pending`` by key (insertion order = age), plus the keys of ended spans."""

    __slots__ = ("_done", "_done_max", "_done_order", "_lock", "_max", "_open", "_ttl")

    def __init__(self, max_open: int, ttl_s: float) -> None:
        self._max = max_open
        self._ttl = ttl_s
        self._open: OrderedDict[SpanKey, Pending] = OrderedDict()
        self._done: set[SpanKey] = set()
        self._done_order: deque[SpanKey] = deque()
        self._done_max = max_open * _DONE_PER_OPEN
        self._lock = threading.Lock()

    def ended(self, key: SpanKey) -> bool:
        """Whether ``key`` ended already (or was evicted): what reaches it now is late."""
        return key in self._done

    def end(self, key: SpanKey, relevant: bool) -> Pending | None:
        """Take out what the span ``key`` collected; remember it ended if it held or read as
        anything (a span ending under it later is late, a second delivery of it a repeat)."""
        with self._lock:
            pending = self._open.pop(key, None)
            if pending is not None or relevant:
                self._remember(key)
            return pending

    def hand_up(self, key: SpanKey, pending: Pending) -> list[Pending]:
        """Add ``pending`` to the open span ``key``; returns what was evicted to make room."""
        with self._lock:
            held = self._open.get(key)
            if held is not None:
                held.merge(pending)
                return _overflow(held)
            evicted = self._expired_locked(time.monotonic())
            while len(self._open) >= self._max:
                evicted.append(self._evict_locked(next(iter(self._open))))
            self._open[key] = pending
            return evicted

    def expired(self) -> list[Pending]:
        with self._lock:
            return self._expired_locked(time.monotonic())

    def drain(self) -> list[Pending]:
        with self._lock:
            return [self._evict_locked(key) for key in list(self._open)]

    def __len__(self) -> int:
        return len(self._open)

    def _expired_locked(self, now: float) -> list[Pending]:
        evicted = []
        while self._open:
            key, oldest = next(iter(self._open.items()))
            age = now - oldest.created
            if age < self._ttl:  # pragma: no mutate: a float clock never lands on the TTL itself
                break
            evicted.append(self._evict_locked(key))
        return evicted

    def _evict_locked(self, key: SpanKey) -> Pending:
        self._remember(key)
        return self._open.pop(key)

    def _remember(self, key: SpanKey) -> None:
        if key in self._done:
            return  # pragma: no mutate: only two threads ending one span at once get here
        self._done.add(key)
        self._done_order.append(key)
        if len(self._done_order) > self._done_max:
            self._done.discard(self._done_order.popleft())
