"""``RunBook``: the one run model every adapter hands its facts to.

An adapter reads its framework's hooks into a few facts (a run started, a model turn of some
shape, a tool ran or failed, the run ended in one of a few ways) and calls the book, which owns
the open runs and their bound, the guard, tool spans, the verdict and the synthesis fallback,
and drives the core handler (which tracks loops) exactly the same way for every framework.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping
from typing import Any, Final, Unpack

from opentelemetry.context import Context
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.core.run_end import AdapterRunEnd
from symfonic_otel.events import AgentStartEvent, TerminationReason
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.invocation.calls import MAX_CALL_STARTS, CallFacts, HeldCall, record_call
from symfonic_otel.invocation.guard import Guard
from symfonic_otel.invocation.loops import positive
from symfonic_otel.invocation.runs import FrameworkRun, RunIndex
from symfonic_otel.invocation.tools import ToolSpans
from symfonic_otel.invocation.turns import Turn, bail_event
from symfonic_otel.invocation.verdicts import END_TURN, Ending, verdict_of
from symfonic_otel.logs import FailureLog

__all__ = ["RunBook"]

_BY_TEXT: Final = "by_text"


class _Paused:
    """The core's InterruptEvent for a run that ended waiting for input (resumed later)."""

    __slots__ = ("name", "run_id")

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.name = ""


class RunBook:
    """Open runs by id, bounded, and the calls that record them through the core handler.

    ``evicted``: the dropped-event kind counted when a run is evicted past ``max_open_runs``
    (None: not counted); ``unfinished_tool_error``: the error type of a tool its run's end
    closed (None: marked unfinished); ``failures``: the adapter's own failure log.
    """

    def __init__(
        self,
        handler: OTelCallbackHandler | None,
        name: str,
        max_open_runs: int,
        *,
        max_keys: int = 10_000,
        evicted: str | None = None,
        unfinished_tool_error: str | None = None,
        failures: FailureLog | None = None,
        prefix: str | None = None,
    ) -> None:
        if handler is not None and not isinstance(handler, OTelCallbackHandler):
            raise TypeError(
                f"{name}: handler must be an OTelCallbackHandler, got {type(handler).__name__}"
            )
        self.handler = handler if handler is not None else OTelCallbackHandler()
        self.max_open_runs = positive(name, "max_open_runs", max_open_runs)
        self.runs = RunIndex(self.max_open_runs, max_keys)
        self.guard = Guard(self.handler, prefix or name, failures)
        self.tools = ToolSpans(self.handler, unfinished_tool_error)
        self._evicted = evicted

    # --- runs ------------------------------------------------------------------------------------

    def get(self, run_id: str | None) -> FrameworkRun | None:
        return self.runs.get(run_id)

    def bound(self, key: Hashable) -> FrameworkRun | None:
        """The run ``key`` (an agent object, say) was bound to at its start."""
        return self.runs.bound(key)

    @property
    def open_runs(self) -> int:
        return len(self.runs)

    def start(
        self,
        run_id: str,
        agent_name: str,
        *,
        tenant: str | None = None,
        query: str = "",
        attributes: Mapping[str, AttributeValue] | None = None,
        started_ns: int | None = None,
        key: Hashable | None = None,
        group: str | None = None,
        open_now: bool = True,
        parent: Context | None = None,
        owner: Any = None,
        facts: Any = None,
    ) -> FrameworkRun | None:
        """Open a run (None for no id or a redelivered start). ``key``: what the framework
        names the run by; ``owner`` / ``facts``: the adapter's own (see ``FrameworkRun``);
        ``open_now`` False: its span opens later (``open``)."""
        if not run_id or run_id in self.runs:
            return None
        run = FrameworkRun(
            run_id, started_ns=started_ns, agent=agent_name, owner=owner, group=group, facts=facts
        )
        for old in self.runs.add(run):  # an end that never came: close the oldest
            if self._evicted is not None:
                self.guard.report(self._evicted)
            self._abandon(old)
        if key is not None:
            self.runs.bind(key, run)
        run.opened = False
        if open_now:
            self.open(run, tenant=tenant, query=query, attributes=attributes, parent=parent)
        return run

    def open(
        self,
        run: FrameworkRun,
        *,
        tenant: str | None = None,
        query: str = "",
        attributes: Mapping[str, AttributeValue] | None = None,
        parent: Context | None = None,
    ) -> None:
        """Open the run's span (once)."""
        if run.opened:
            return
        run.opened = True  # once, even if the handler fails (the core then knows no run)
        span_attributes: dict[str, AttributeValue] = dict(attributes or {})
        if run.agent:
            span_attributes[semconv.GEN_AI_AGENT_NAME] = run.agent
        self.handler.agent_start(
            AgentStartEvent(query=query if self.handler.capture_content else "", run_id=run.run_id),
            tenant_id=tenant,
            parent=parent,
            start_time_ns=run.started_ns,
            attributes=span_attributes,
        )

    # --- model calls and tools ---------------------------------------------------------------

    def model_call(self, run: FrameworkRun, turn: Turn | None, **call: Unpack[CallFacts]) -> None:
        """One model call of ``run`` (see ``calls.record_call``); node
        ``react_synthesize_fallback`` marks a forced final answer (its text decides
        ``synthesis.recovered``, whatever the capture)."""
        record_call(self.handler, run, turn, **call)

    def call_started(self, run: FrameworkRun, call_id: str) -> None:
        """A model call ``call_id`` of ``run`` started now (calls may overlap)."""
        run.call_starts[call_id] = time.time_ns()
        while len(run.call_starts) > MAX_CALL_STARTS:
            del run.call_starts[next(iter(run.call_starts))]

    def hold(self, run: FrameworkRun, call: HeldCall) -> None:
        """Hold a finished call until ``flush`` says what it was."""
        run.held = call

    def flush(self, run: FrameworkRun, *, synthesis: bool) -> None:
        """Record the held call, as the forced final answer when ``synthesis``."""
        held, run.held = run.held, None
        if isinstance(held, HeldCall):
            call: CallFacts = {**held.call, "node": semconv.NODE_SYNTHESIZE_FALLBACK}
            record_call(self.handler, run, held.turn, **(call if synthesis else held.call))

    def start_tool(self, run: FrameworkRun, name: str, call_id: str, args: object) -> None:
        self.tools.start(run, name, call_id, args)

    def end_tool(
        self, run: FrameworkRun, call_id: str, result: object, error_type: str | None
    ) -> None:
        self.tools.end(run, call_id, result, error_type)

    # --- ends ------------------------------------------------------------------------------------

    def end(
        self,
        run_id: str,
        ending: Ending,
        *,
        answer: str | None = None,
        error_type: str | None = None,
        stop_reason: str = END_TURN,
        answered: bool | str | None = _BY_TEXT,
        final: str | None = None,
        duration_ms: float | None = None,
    ) -> None:
        """Close the run with its verdict (see ``verdicts``). ``answer``: its answer text; the
        answer flag is read from it unless ``answered`` gives it (None: unknown); ``final``:
        the answer to show when it is not text (captured only with content capture)."""
        run = self.runs.pop(run_id)
        if run is None:
            return
        self.tools.close_all(run)
        if not run.opened:
            if ending == "abandoned":
                return
            self.open(run)
        if duration_ms is None and run.started_ns is None:
            duration_ms = max(time.monotonic() - run.started, 0.0) * 1000.0
        elif duration_ms is None and run.started_ns is not None:
            duration_ms = max(time.time_ns() - run.started_ns, 0) / 1e6
        if ending == "forced":
            flag: bool | None = run.recovered
        elif ending == "paused" and answered == _BY_TEXT:
            flag = None
        elif isinstance(answered, bool) or answered is None:
            flag = answered
        else:
            flag = answer is not None and bool(answer.strip())
        shown = final if final is not None else answer
        verdict = verdict_of(
            run,
            ending,
            answered=flag,
            final=shown if flag and self.handler.capture_content else None,
            error_type=error_type,
            stop_reason=stop_reason,
            duration_ms=duration_ms,
        )
        if verdict.paused:
            self.handler.interrupt(_Paused(run_id))
        if verdict.bail is not None:
            self.bail(run, verdict.bail)
        self.handler.agent_end(
            verdict.end, error_type=verdict.end.error_type, answered=verdict.answered
        )

    def bail(self, run: FrameworkRun, reason: TerminationReason) -> None:
        self.handler.react_loop_end(bail_event(run.run_id, run.calls - 1, run.last, reason))

    def close_all(self) -> None:
        """End the runs still open as ``abandoned`` (the framework is shutting down)."""
        for run in self.runs.drain():
            self._abandon(run)

    def _abandon(self, run: FrameworkRun) -> None:
        self.tools.close_all(run)
        if run.opened:
            self.handler.agent_end(AdapterRunEnd(run.run_id, "abandoned"))
