"""The processor's bounded state: the runs it has open and which run each open SDK span is in.

A run is one ``Runner.run``: the SDK's ``task`` span, or the trace itself when task spans are
turned off. Every open SDK span of a run is indexed by its id so that a child (a generation
under a turn, a tool under a turn) finds its run from its ``parent_id``. Both maps are capped:
past ``max_runs`` the oldest run is evicted (the caller ends it as abandoned), past
``max_spans_per_run`` a run's further spans are not indexed (their children fall back to the
trace's newest run).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from opentelemetry.trace import Span

from symfonic_otel.openai_agents.read import RunError, Shape

__all__ = ["AgentsRun", "RunIndex"]


@dataclass(slots=True)
class AgentsRun:
    """One SDK run as the processor follows it."""

    key: str
    trace_id: str
    started_ns: int | None
    tenant: str | None
    conversation: str | None
    parent_run: str | None = None
    parent_span: str | None = None  # the SDK span it was started under (agents as tools)
    opened: bool = False
    agent: str = ""
    calls: int = 0
    last: Shape | None = None
    last_failed: bool = False
    error: RunError | None = None
    spans: set[str] = field(default_factory=set)
    tools: dict[str, Span] = field(default_factory=dict)


class RunIndex:
    """Open runs (oldest first) and the open SDK spans that belong to each."""

    __slots__ = ("_by_trace", "_max_runs", "_max_spans", "_owner", "_runs")

    def __init__(self, max_runs: int, max_spans_per_run: int) -> None:
        self._max_runs = max_runs
        self._max_spans = max_spans_per_run
        self._runs: OrderedDict[str, AgentsRun] = OrderedDict()
        self._owner: dict[str, str] = {}
        self._by_trace: dict[str, list[str]] = {}  # a trace's open runs, oldest first

    def __len__(self) -> int:
        return len(self._runs)

    @property
    def indexed_spans(self) -> int:
        return len(self._owner)

    def add(self, run: AgentsRun) -> list[AgentsRun]:
        """Add ``run``; returns the runs evicted to stay within the cap."""
        evicted: list[AgentsRun] = []
        while len(self._runs) >= self._max_runs:
            _, old = self._runs.popitem(last=False)
            self._forget(old)
            evicted.append(old)
        self._runs[run.key] = run
        self._by_trace.setdefault(run.trace_id, []).append(run.key)
        return evicted

    def get(self, key: str) -> AgentsRun | None:
        return self._runs.get(key)

    def owner(self, span_id: object, trace_id: object) -> AgentsRun | None:
        """The run of the span ``span_id`` (a child's parent), else the trace's newest run."""
        key = self._owner.get(span_id) if isinstance(span_id, str) else None
        if key is None and isinstance(trace_id, str):
            keys = self._by_trace.get(trace_id)
            key = keys[-1] if keys else None
        return self._runs.get(key) if key is not None else None

    def index(self, run: AgentsRun, span_id: object) -> bool:
        """Record that ``span_id`` is open in ``run``; False past the per-run cap."""
        if not isinstance(span_id, str) or len(run.spans) >= self._max_spans:
            return False
        run.spans.add(span_id)
        self._owner[span_id] = run.key
        return True

    def release(self, span_id: object) -> None:
        key = self._owner.pop(span_id, None) if isinstance(span_id, str) else None
        run = self._runs.get(key) if key is not None else None
        if run is not None:
            run.spans.discard(span_id)

    def pop(self, key: str) -> AgentsRun | None:
        run = self._runs.pop(key, None)
        if run is not None:
            self._forget(run)
        return run

    def drain(self) -> list[AgentsRun]:
        runs = list(self._runs.values())
        for run in runs:
            self.pop(run.key)
        return runs

    def _forget(self, run: AgentsRun) -> None:
        for span_id in run.spans:
            self._owner.pop(span_id, None)
        run.spans.clear()
        keys = self._by_trace.get(run.trace_id)
        if keys is not None:
            if run.key in keys:
                keys.remove(run.key)
            if not keys:
                del self._by_trace[run.trace_id]
