"""The run record every adapter fills, and the bounded index of the runs open at once.

A run is keyed by its id. A framework that names a run by something else (an agent object, an
SDK span under the run, a trace) points that key at the run through the index: ``bind`` for a
caller's key, ``index`` for the framework's spans inside the run, ``group`` for the trace or
session it belongs to. Everything is capped: past ``max_runs`` the oldest run is evicted (the
caller ends it as abandoned), past ``max_keys`` a run's further keys are not indexed.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import Span

from symfonic_otel.invocation.turns import Turn

__all__ = ["FrameworkRun", "RunIndex"]


@dataclass(slots=True, eq=False)
class FrameworkRun:
    """One agent run as its adapter follows it: what the shared verdict is decided from.

    ``facts`` holds what only one framework records about a run (its adapter's own dataclass).
    """

    run_id: str
    started: float = field(default_factory=time.monotonic)
    started_ns: int | None = None
    agent: str = ""
    calls: int = 0
    last: Turn | None = None
    last_failed: bool = False
    tools: OrderedDict[str, Span | None] = field(default_factory=OrderedDict)
    model_started_ns: int | None = None
    call_starts: dict[str, int] = field(default_factory=dict)  # a call's id -> its start
    held: Any = None  # a finished call whose node is known only later (``calls.HeldCall``)
    tool_seq: int = 0
    model: str = ""
    answer: str | None = None
    error_type: str | None = None
    capped: bool = False
    recovered: bool = False
    fallbacks: int = 0
    opened: bool = True
    owner: Any = None
    key: Hashable | None = None
    group: str | None = None
    spans: dict[str, Any] = field(default_factory=dict)
    facts: Any = None


class RunIndex:
    """Open runs (oldest first) and the keys that lead to each; see the module docstring."""

    __slots__ = ("_bound", "_groups", "_max_keys", "_max_runs", "_owner", "_runs")

    def __init__(self, max_runs: int, max_keys: int = 10_000) -> None:
        self._max_runs = max_runs
        self._max_keys = max_keys
        self._runs: OrderedDict[str, FrameworkRun] = OrderedDict()
        self._owner: dict[str, str] = {}  # an indexed span -> its run
        self._bound: OrderedDict[Hashable, str] = OrderedDict()  # a caller's key -> its run
        self._groups: dict[str, list[str]] = {}  # a group's open runs, oldest first

    def __len__(self) -> int:
        return len(self._runs)

    @property
    def max_runs(self) -> int:
        return self._max_runs

    @property
    def indexed_spans(self) -> int:
        return len(self._owner)

    def __contains__(self, run_id: str) -> bool:
        return run_id in self._runs

    def add(self, run: FrameworkRun) -> list[FrameworkRun]:
        """Add ``run``; returns the runs evicted to stay within the cap (oldest first)."""
        evicted: list[FrameworkRun] = []
        while len(self._runs) >= self._max_runs:
            _, old = self._runs.popitem(last=False)
            self._forget(old)
            evicted.append(old)
        self._runs[run.run_id] = run
        if run.group is not None:
            self._groups.setdefault(run.group, []).append(run.run_id)
        return evicted

    def get(self, run_id: str | None) -> FrameworkRun | None:
        return self._runs.get(run_id) if run_id is not None else None

    def values(self) -> list[FrameworkRun]:
        return list(self._runs.values())

    def newest(self, match: Callable[[FrameworkRun], bool]) -> FrameworkRun | None:
        """The newest open run ``match`` accepts (a framework that names runs by content)."""
        for run in reversed(self._runs.values()):
            if match(run):
                return run
        return None

    # --- keys ------------------------------------------------------------------------------------

    def bind(self, key: Hashable, run: FrameworkRun) -> None:
        """Point ``key`` (an agent, say) at ``run``; the oldest bindings go past the cap."""
        self._bound[key] = run.run_id
        self._bound.move_to_end(key)
        run.key = key
        while len(self._bound) > self._max_runs:
            self._bound.popitem(last=False)

    def bound(self, key: Hashable) -> FrameworkRun | None:
        run_id = self._bound.get(key)
        return self._runs.get(run_id) if run_id is not None else None

    def unbind(self, key: Hashable) -> FrameworkRun | None:
        run_id = self._bound.pop(key, None)
        return self._runs.get(run_id) if run_id is not None else None

    def index(self, run: FrameworkRun, span_id: object, value: Any = None) -> bool:
        """Record that ``span_id`` is open in ``run``; False past the per-run cap."""
        if not isinstance(span_id, str) or len(run.spans) >= self._max_keys:
            return False
        run.spans[span_id] = value
        self._owner[span_id] = run.run_id
        return True

    def owner(self, span_id: object, group: object = None) -> FrameworkRun | None:
        """The run ``span_id`` is (in), else the newest open run of ``group``."""
        if isinstance(span_id, str):
            key = span_id if span_id in self._runs else self._owner.get(span_id)
            if key is not None:
                return self._runs.get(key)
        if isinstance(group, str):
            keys = self._groups.get(group)
            return self._runs.get(keys[-1]) if keys else None
        return None

    def release(self, span_id: object) -> None:
        if not isinstance(span_id, str):
            return
        key = self._owner.pop(span_id, None)
        run = self._runs.get(key) if key is not None else None
        if run is not None:
            run.spans.pop(span_id, None)

    # --- ends ------------------------------------------------------------------------------------

    def pop(self, run_id: str) -> FrameworkRun | None:
        run = self._runs.pop(run_id, None)
        if run is not None:
            self._forget(run)
        return run

    def drain(self) -> list[FrameworkRun]:
        """Take every open run out, oldest first."""
        runs = list(self._runs.values())
        for run in runs:
            self.pop(run.run_id)
        return runs

    def _forget(self, run: FrameworkRun) -> None:
        for span_id in run.spans:
            self._owner.pop(span_id, None)
        run.spans.clear()
        if run.key is not None and self._bound.get(run.key) == run.run_id:
            del self._bound[run.key]
        keys = self._groups.get(run.group) if run.group is not None else None
        if keys is not None:
            if run.run_id in keys:
                keys.remove(run.run_id)
            if not keys:
                del self._groups[run.group]  # type: ignore[arg-type]  # not None: keys found
