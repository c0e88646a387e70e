"""The bounded registry of open agent runs.

Runs whose end never arrives would otherwise keep their span (and everything it references)
alive forever. The registry is ordered by start, so both limits evict from the oldest end:
runs older than the TTL, then the oldest runs while there are more than ``max_open``.
Eviction only *returns* the evicted runs: the caller ends their spans outside the lock.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from opentelemetry.context import Context
from opentelemetry.trace import Span

from symfonic_otel import semconv
from symfonic_otel.core.loops import RunLoops
from symfonic_otel.core.steps import RunSteps
from symfonic_otel.emit.metrics import MetricEmitter

_RECENTLY_ENDED_CAP = 4096
_STEPS_LOCK = threading.Lock()
# Model calls that are not iterations of the loop: the recovery completion after a silent bail
# and the fabrication check's revision.
_NOT_LOOP_NODES = frozenset({semconv.NODE_SYNTHESIZE_FALLBACK, semconv.NODE_FABRICATION_REVISE})


@dataclass(slots=True, eq=False)
class OpenRun:
    """What the handler keeps about a run between its start and its end."""

    run_id: str
    span: Span
    context: Context
    tenant: str
    started_monotonic: float
    # Loop model calls: calls at the ``react`` node (Symfonic, the reference loop); in a run with
    # none (a LangChain graph), every call but synthesis and fabrication revision.
    react_calls: int = 0
    # Symfonic's ``iteration_index`` counts the AI messages of the conversation, earlier turns
    # on the same thread included: only the span of indices within this run counts.
    first_react_index: int = -1
    last_react_index: int = -1
    other_calls: int = 0
    termination_reason: str | None = field(default=None)
    # Symfonic step events: open tools, nodes and model calls (made at the first step event),
    # and the pause (``ask_user`` / ``interrupt``) the run is waiting on, if any.
    steps: RunSteps | None = None
    paused: str | None = None
    interrupt_name: str = ""
    node_error_type: str | None = None  # the last NodeError's: Symfonic's AgentEnd has none
    # The emitter labelled with the framework's agent name (None: the handler's own).
    metrics: MetricEmitter | None = None
    # Model calls, tool calls, identical tool calls and the loop detected (``core.loops``).
    loops: RunLoops = field(default_factory=RunLoops)

    def step_state(self) -> RunSteps:
        steps = self.steps
        if steps is None:
            with _STEPS_LOCK:
                steps = self.steps
                if steps is None:
                    steps = self.steps = RunSteps()
        return steps

    def count_call(self, node: str, iteration_index: int) -> None:
        if node in _NOT_LOOP_NODES:
            return
        if node == semconv.NODE_REACT:
            self.react_calls += 1
            if self.first_react_index < 0 or iteration_index < self.first_react_index:
                self.first_react_index = iteration_index
            self.last_react_index = max(self.last_react_index, iteration_index)
        else:
            self.other_calls += 1

    @property
    def iterations(self) -> int:
        if self.react_calls:
            return max(self.react_calls, self.last_react_index - self.first_react_index + 1)
        return self.other_calls


class RunRegistry:
    """Open runs by id, bounded by age and count; remembers recently ended ids for dedup."""

    def __init__(self, ttl_s: float, max_open: int) -> None:
        self._ttl_s = ttl_s
        self._max_open = max_open
        self._open: OrderedDict[str, OpenRun] = OrderedDict()
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._open)

    def get(self, run_id: str) -> OpenRun | None:
        return self._open.get(run_id)

    def sole(self) -> OpenRun | None:
        """The open run when there is exactly one (events that name no run belong to it)."""
        with self._lock:
            if len(self._open) != 1:
                return None
            return next(iter(self._open.values()))

    def was_ended(self, run_id: str) -> bool:
        return run_id in self._ended

    def add(self, run: OpenRun) -> tuple[bool, list[OpenRun]]:
        """Register ``run``; returns (added, runs evicted to make room or past their TTL)."""
        with self._lock:
            if run.run_id in self._open:
                return False, []
            evicted = self._expire_locked(run.started_monotonic)
            self._open[run.run_id] = run
            while len(self._open) > self._max_open:
                _, oldest = self._open.popitem(last=False)
                self._remember_locked(oldest.run_id)
                evicted.append(oldest)
            return True, evicted

    def pop(self, run_id: str) -> OpenRun | None:
        with self._lock:
            run = self._open.pop(run_id, None)
            if run is not None:
                self._remember_locked(run_id)
            return run

    def expire(self, now: float | None = None) -> list[OpenRun]:
        """Remove and return the runs older than the TTL."""
        with self._lock:
            return self._expire_locked(time.monotonic() if now is None else now)

    def drain(self) -> list[OpenRun]:
        """Remove and return every open run."""
        with self._lock:
            runs = list(self._open.values())
            for run in runs:
                self._remember_locked(run.run_id)
            self._open.clear()
            return runs

    def _expire_locked(self, now: float) -> list[OpenRun]:
        expired: list[OpenRun] = []
        deadline = now - self._ttl_s
        while self._open:
            oldest = next(iter(self._open.values()))
            if oldest.started_monotonic > deadline:
                break
            self._open.popitem(last=False)
            self._remember_locked(oldest.run_id)
            expired.append(oldest)
        return expired

    def _remember_locked(self, run_id: str) -> None:
        self._ended[run_id] = None
        if len(self._ended) > _RECENTLY_ENDED_CAP:
            self._ended.popitem(last=False)
