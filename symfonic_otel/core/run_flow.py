"""The run flow: AgentStart / AgentEnd, ReactLoopEnd, FabricationDetected and pauses -> telemetry.

A run opens its ``invoke_agent`` span at AgentStart and keeps it in the registry until AgentEnd
(or its TTL, the open-run cap, shutdown). A run paused on ``ask_user`` or an interrupt ends
``completed`` with ``symfonic.run.paused``: no empty-answer flag, and a loop end after the pause
is no silent bail (the run is waiting for its user, not failing them).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.core import loops
from symfonic_otel.core.handler_core import (
    DUPLICATE,
    EMPTY_CONTEXT,
    MALFORMED,
    UNKNOWN_RUN,
    HandlerCore,
)
from symfonic_otel.core.loops import RunLoops
from symfonic_otel.core.runs import OpenRun
from symfonic_otel.emit.recorder import span_link
from symfonic_otel.emit.retention_marks import keep_trace
from symfonic_otel.emit.span_guard import end_span
from symfonic_otel.emit.vocabulary import TERMINATION_REASONS
from symfonic_otel.read import extract as ex
from symfonic_otel.read import extract_steps as xs
from symfonic_otel.read.sanitise import clean_attributes


class RunFlow:
    __slots__ = ("_core",)

    def __init__(self, core: HandlerCore) -> None:
        self._core = core

    def agent_start(
        self,
        event: Any,
        tenant_id: str | None,
        parent: Context | None,
        start_time_ns: int | None,
        attributes: Mapping[str, AttributeValue] | None,
    ) -> None:
        core = self._core
        run_id = ex.run_id(event)
        if not run_id:
            core.drop("agent_start", MALFORMED)
            return
        if core.runs.get(run_id) is not None or core.runs.was_ended(run_id):
            core.drop("agent_start", DUPLICATE)  # a redelivered start opens no phantom run
            return
        tenant = core.tenant(tenant_id)
        start, bad_time = ex.explicit_time(start_time_ns)
        query = ex.text(event, "query") if core.spans.capture_content else ""
        extra = clean_attributes(attributes) if attributes else None
        span = core.spans.start_run(run_id, tenant, query, parent, start, extra)
        try:
            run = OpenRun(
                run_id=run_id,
                span=span,
                context=trace.set_span_in_context(span, EMPTY_CONTEXT),
                tenant=tenant,
                started_monotonic=time.monotonic(),
                metrics=core.agent_metrics(
                    attributes.get(semconv.GEN_AI_AGENT_NAME) if attributes else None, tenant
                ),
                loops=RunLoops(core.loop_limits),
            )
        except BaseException:
            end_span(span)  # registered nowhere yet: no sweep or shutdown would ever end it
            raise
        added, evicted = core.runs.add(run)
        if not added:  # lost a race with a concurrent start of the same id
            end_span(span)
            core.drop("agent_start", DUPLICATE)
        else:
            (run.metrics or core.metrics).run_started()
        for old in evicted:
            self.abandon(old)
        if bad_time:
            core.drop("agent_start", MALFORMED)

    def agent_end(
        self,
        event: Any,
        error_type: str | None,
        end_time_ns: int | None,
        answered: object,
        attributes: Mapping[str, AttributeValue] | None,
    ) -> None:
        core = self._core
        run_id = ex.run_id(event)
        run = core.runs.pop(run_id) if run_id else None
        if run is None:
            reason = DUPLICATE if run_id and core.runs.was_ended(run_id) else UNKNOWN_RUN
            core.drop("agent_end", reason if run_id else MALFORMED)
            return
        core.close_steps(run)
        end = ex.run_end(event, answered, run.termination_reason is not None, core.max_run_ms)
        if end.outcome != "completed":  # errored or cancelled: its trace is kept whole
            keep_trace(run.span.get_span_context())
        paused = run.paused
        empty = None if paused is not None else end.empty  # waiting for an answer: not blank
        counts = loops.run_ended(core, run, end.outcome, end.stop_reason, on_span=False)
        core.spans.end_run(
            run.span,
            end.outcome,
            empty,
            end.stop_reason,
            (ex.error_type(error_type, event) or run.node_error_type)
            if end.outcome == "error"
            else None,
            end.final_response,
            core.end_time(run.span, end_time_ns),
            paused,
            run.interrupt_name,
            {**clean_attributes(attributes), **counts} if attributes else counts,
        )
        duration_s = (
            end.duration_ms / 1000.0
            if end.duration_ms is not None
            else max(time.monotonic() - run.started_monotonic, 0.0)
        )
        (run.metrics or core.metrics).run_ended(
            run.tenant,
            end.outcome,
            empty,
            duration_s,
            run.iterations,
            end.stop_reason,
            paused is not None,
            span_link(run.span.get_span_context()),
        )
        if end.unreadable is not None:
            core.failures.report("agent_end", end.unreadable, run_id=run_id)
        if end.malformed:
            core.drop("agent_end", MALFORMED)

    def abandon(self, run: OpenRun) -> None:
        """End a run whose AgentEnd never came: outcome ``abandoned``, counted as an orphan."""
        core = self._core
        core.close_steps(run)
        keep_trace(run.span.get_span_context())
        loops.run_ended(core, run, "abandoned")
        core.spans.abandon_run(run.span)
        emitter = run.metrics or core.metrics
        emitter.run_ended(run.tenant, "abandoned", None, None, run.iterations, None)
        emitter.orphaned()

    def react_loop_end(self, event: Any) -> None:
        core = self._core
        run_id = ex.run_id(event)
        run = core.run(run_id)
        reason = ex.choice(ex.text(event, "termination_reason"), TERMINATION_REASONS)
        paused = run is not None and run.paused is not None
        # The bail is counted whatever else is wrong with the event: it is what operators page
        # on. A run paused for its user is the exception: it has not answered yet.
        if not paused:
            if run is not None:
                # The bail's trace is kept whole; the exemplar names it unless it was lost.
                context = run.span.get_span_context()
                link = span_link(context) if keep_trace(context) else None
                (run.metrics or core.metrics).silent_bail(run.tenant, reason, link)
            else:
                core.metrics.silent_bail(core.tenant(None), reason)
        if run is None:
            core.drop("react_loop_end", UNKNOWN_RUN if run_id else MALFORMED)
            return
        if not paused:
            run.termination_reason = reason
        core.spans.loop_end(run.span, reason, ex.loop_end_attributes(event, reason), paused)

    def fabrication_detected(self, event: Any) -> None:
        core = self._core
        if ex.legacy_fabrication(event):  # the typed event of the same detection is recorded
            return
        run_id = ex.run_id(event)
        run = core.run(run_id)
        tenant = run.tenant if run is not None else core.tenant(None)
        mode = ex.choice(ex.text(event, "mode"), ex.FABRICATION_MODES)
        action = ex.choice(ex.text(event, "action_taken"), ex.FABRICATION_ACTIONS)
        confidence = min(ex.number(event, "max_finding_confidence") or 0.0, 1.0)
        core.metrics.fabrication(tenant, mode, action, confidence)
        if run is None:
            core.drop("fabrication_detected", UNKNOWN_RUN if run_id else MALFORMED)
            return
        threshold = ex.number(event, "refuse_threshold")
        keep_trace(run.span.get_span_context())
        core.spans.fabrication(run.span, mode, action, confidence, event, threshold)

    def pause(self, event: Any, kind: str, event_kind: str) -> None:
        """AskUserQuestion / Interrupt: the run waits for its user. Symfonic's own interrupt
        events name no run; they belong to the only open run, when there is exactly one."""
        core = self._core
        step = xs.pause(event, kind)
        run = core.run(step.run_id) if step.run_id else core.runs.sole()
        if run is None:
            core.drop(event_kind, UNKNOWN_RUN if step.run_id else MALFORMED)
            return
        run.paused = kind
        run.interrupt_name = step.interrupt_name
        core.spans.pause(run.span, kind, step.interrupt_name)
