"""The adapter's bounded state: the agent runs it follows and which run each open span is in.

A run is one agent workflow run: the dispatcher's ``<Workflow>.run-<uuid>`` span. Each span
entered under it (a step, a model call, a tool) is indexed with its run and its step, the
ancestor right under the run span, so that a model call knows which step made it. Both maps are
capped: past ``max_runs`` the oldest run is evicted (the caller ends it as abandoned), past
``max_spans_per_run`` a run's further spans are not indexed.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from opentelemetry.trace import Span

from symfonic_otel.read.turns import Turn

__all__ = ["Call", "LlamaRun", "RunIndex"]


@dataclass(slots=True)
class Call:
    """A model call between its LLMChatStart and LLMChatEnd."""

    start_ns: int
    start_monotonic: float
    model: str
    fallback: bool
    first_chunk_s: float | None = None


@dataclass(slots=True)
class LlamaRun:
    key: str
    budget: int  # max_iterations
    agent: str = ""
    calls: int = 0
    parses: int = 0  # parse_agent_output steps: LlamaIndex's own iteration count
    cap_step: str | None = None  # the step that found the budget spent
    fallbacks: int = 0
    last: Turn | None = None
    spans: dict[str, tuple[str, str]] = field(default_factory=dict)  # span -> (step, parent)
    pending: dict[str, Call] = field(default_factory=dict)  # model span id -> call
    tools: dict[str, Span] = field(default_factory=dict)  # tool step span id -> span
    streamed: set[str] = field(default_factory=set)  # ended model spans whose stream goes on


class RunIndex:
    """Open runs (oldest first) and the open spans of each."""

    __slots__ = ("_max_runs", "_max_spans", "_owner", "_runs")

    def __init__(self, max_runs: int, max_spans_per_run: int) -> None:
        self._max_runs = max_runs
        self._max_spans = max_spans_per_run
        self._runs: OrderedDict[str, LlamaRun] = OrderedDict()
        self._owner: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._runs)

    def add(self, run: LlamaRun) -> list[LlamaRun]:
        evicted: list[LlamaRun] = []
        while len(self._runs) >= self._max_runs:
            _, old = self._runs.popitem(last=False)
            self._forget(old)
            evicted.append(old)
        self._runs[run.key] = run
        return evicted

    def get(self, key: str | None) -> LlamaRun | None:
        return self._runs.get(key) if key is not None else None

    def owner(self, span_id: str | None) -> LlamaRun | None:
        """The run the span ``span_id`` is in (the run span itself included)."""
        if span_id is None:
            return None
        run = self._runs.get(span_id)
        if run is not None:
            return run
        key = self._owner.get(span_id)
        return self._runs.get(key) if key is not None else None

    def index(self, run: LlamaRun, span_id: str, parent_id: str) -> str | None:
        """Index ``span_id`` (child of ``parent_id``) in ``run``; returns its step's span id."""
        step = span_id if parent_id == run.key else run.spans.get(parent_id, (None, ""))[0]
        if step is None or len(run.spans) >= self._max_spans:
            return None
        run.spans[span_id] = (step, parent_id)
        self._owner[span_id] = run.key
        return step

    @staticmethod
    def ancestors(run: LlamaRun, span_id: str) -> list[str]:
        """The indexed spans above ``span_id`` in ``run``, innermost first."""
        found: list[str] = []
        parent = run.spans.get(span_id, ("", ""))[1]
        while parent in run.spans and len(found) < len(run.spans):
            found.append(parent)
            parent = run.spans[parent][1]
        return found

    def release(self, run: LlamaRun, span_id: str) -> None:
        if run.spans.pop(span_id, None) is not None:
            self._owner.pop(span_id, None)

    def pop(self, key: str) -> LlamaRun | None:
        run = self._runs.pop(key, None)
        if run is not None:
            self._forget(run)
        return run

    def drain(self) -> list[LlamaRun]:
        runs = list(self._runs.values())
        for run in runs:
            self.pop(run.key)
        return runs

    def _forget(self, run: LlamaRun) -> None:
        for span_id in run.spans:
            self._owner.pop(span_id, None)
        run.spans.clear()
