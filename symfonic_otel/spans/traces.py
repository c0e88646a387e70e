"""What the processor remembers of a trace until its root ends: a few flags, never spans.

Each trace costs a fixed few dozen bytes whatever it holds (the last model call's verdict, not
every call), and the table is bounded twice: by count (the oldest trace is evicted past
``max_traces``) and by age (a trace older than ``ttl_s`` is evicted at the next span or metric
collection). An evicted trace that saw a run is still judged on what it saw, so a root that
never ends (a leaked span, a root in another process) loses no bail. Traces already judged are
remembered (ids only, bounded) so that a span ending after its root opens no second run.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from symfonic_otel.spans.reading import Output


@dataclass(slots=True, eq=False)
class TraceRun:
    """One trace's evidence, folded in as its spans end."""

    created: float = field(default_factory=time.monotonic)
    agent_seen: bool = False
    ours: bool = False  # a span of this package's own handler: that handler counts the run
    chats: int = 0
    last_chat_end: int = -1
    last_output: Output = Output.UNKNOWN
    last_finish: str | None = None
    final_end: int = -1
    final_output: Output = Output.UNKNOWN
    step_cap: bool = False
    failed: bool = False
    run_start: int | None = None
    run_end: int | None = None
    run_link: tuple[int, int] | None = None  # the outermost run span seen (trace, span id)
    tenant: str | None = None
    tenant_rank: int = 1 << 30  # index of the attribute it came from: lower is preferred

    def chat(self, end: int, output: Output, finish: str | None) -> None:
        self.chats += 1
        if end >= self.last_chat_end:
            self.last_chat_end, self.last_output, self.last_finish = end, output, finish

    def run_span(self, start: int, end: int, output: Output, failed: bool, step_cap: bool) -> None:
        self.agent_seen = True
        self.failed = self.failed or failed
        self.step_cap = self.step_cap or step_cap
        self.run_start = start if self.run_start is None else min(self.run_start, start)
        self.run_end = end if self.run_end is None else max(self.run_end, end)
        # The outermost run span ends last: its final output is the run's answer.
        if output is not Output.UNKNOWN and end >= self.final_end:
            self.final_end, self.final_output = end, output

    def offer_tenant(self, rank: int, value: str) -> None:
        if rank < self.tenant_rank:
            self.tenant_rank, self.tenant = rank, value


class TraceTable:
    """Open traces by id (insertion order = age), plus the ids of traces already judged."""

    __slots__ = ("_done", "_done_order", "_lock", "_max", "_open", "_ttl")

    def __init__(self, max_traces: int, ttl_s: float) -> None:
        self._max = max_traces
        self._ttl = ttl_s
        self._open: OrderedDict[int, TraceRun] = OrderedDict()
        self._done: set[int] = set()
        self._done_order: deque[int] = deque()
        self._lock = threading.Lock()

    def get_or_open(self, trace_id: int) -> tuple[TraceRun | None, list[TraceRun]]:
        """The trace's state (None if already judged) and the traces evicted to make room."""
        with self._lock:
            run = self._open.get(trace_id)
            if run is not None:
                return run, []
            if trace_id in self._done:
                return None, []
            evicted = self._expired_locked(time.monotonic())
            while len(self._open) >= self._max:
                evicted.append(self._close_locked(next(iter(self._open))))
            run = self._open[trace_id] = TraceRun()
            return run, evicted

    def peek(self, trace_id: int) -> TraceRun | None:
        with self._lock:
            return self._open.get(trace_id)

    def close(self, trace_id: int) -> TraceRun | None:
        """Take the trace out for judging; later spans of it are ignored."""
        with self._lock:
            if trace_id not in self._open:
                return None
            return self._close_locked(trace_id)

    def expired(self) -> list[TraceRun]:
        with self._lock:
            return self._expired_locked(time.monotonic())

    def drain(self) -> list[TraceRun]:
        with self._lock:
            return [self._close_locked(trace_id) for trace_id in list(self._open)]

    def __len__(self) -> int:
        return len(self._open)

    def _expired_locked(self, now: float) -> list[TraceRun]:
        evicted = []
        while self._open:
            trace_id, oldest = next(iter(self._open.items()))
            if now - oldest.created < self._ttl:
                break
            evicted.append(self._close_locked(trace_id))
        return evicted

    def _close_locked(self, trace_id: int) -> TraceRun:
        run = self._open.pop(trace_id)
        self._done.add(trace_id)
        self._done_order.append(trace_id)
        if len(self._done_order) > self._max:
            self._done.discard(self._done_order.popleft())
        return run
