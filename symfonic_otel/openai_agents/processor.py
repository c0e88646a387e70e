"""``SymfonicTracingProcessor``: the OpenAI Agents SDK's traces -> this package's runs and metrics.

Registered with ``agents.add_trace_processor`` (beside the SDK's own exporter) or
``agents.set_trace_processors`` (instead of it). Each ``Runner.run`` (the SDK's ``task`` span, or
the trace when task spans are off) becomes one ``invoke_agent`` run named after its first agent;
its generations and responses become ``chat`` spans with usage, its function calls
``execute_tool`` spans, handoffs and guardrail checks spans of their own. An agent run as a tool
of another becomes a sub-run under that tool's span.

How the run ended is read from the SDK's span errors by their data keys: the turn budget
(``MaxTurnsExceeded``) is a silent bail with stop reason ``recursion_limit``; a guardrail's
tripwire and any other error end the run as ``error``; a run that ended on a blank model turn
(no text, no tool calls: an empty ``final_output``) is a silent bail. The tenant is the
``tenant_scope`` around the run, else the trace metadata's ``tenant_id``.

Every callback is guarded (a failure is logged once per kind and counted, never raised into the
SDK), state is capped (open runs, indexed spans per run), and no prompt, answer or tool payload
is recorded unless the handler captures content.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final

from agents.tracing import Span as AgentsSpan
from agents.tracing import Trace, TracingProcessor
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.core.run_end import AdapterRunEnd
from symfonic_otel.events import (
    AgentStartEvent,
    ReactLoopEndEvent,
    TerminationReason,
)
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.logs import FailureLog
from symfonic_otel.openai_agents import read
from symfonic_otel.openai_agents.runs import AgentsRun, RunIndex
from symfonic_otel.openai_agents.steps import StepRecorder

__all__ = ["SymfonicTracingProcessor"]

_MAX_TURNS_ERROR: Final = "MaxTurnsExceeded"
_STOP_END_TURN: Final = "end_turn"
_UNFINISHED: Final = {semconv.STEP_UNFINISHED: True}
# Which span error explains a run best, when several of its spans carry one.
_ERROR_RANK: Final = {"error": 0, "guardrail": 1, "max_turns": 2}
_TENANT_KEY: Final = "tenant_id"


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"SymfonicTracingProcessor: {name} must be an int >= 1, got {value!r}")
    return value


def _tenant_of(metadata: object) -> str | None:
    value = metadata.get(_TENANT_KEY) if isinstance(metadata, Mapping) else None
    return value if isinstance(value, str) and value else None


class SymfonicTracingProcessor(TracingProcessor):
    """An Agents SDK tracing processor recording runs, model calls, tools and silent bails.

    ``handler=`` shares an existing ``OTelCallbackHandler``; otherwise one is built from
    ``handler_kwargs`` (``tracer_provider``, ``meter_provider``, ``capture_content``...).
    """

    def __init__(
        self,
        *,
        handler: OTelCallbackHandler | None = None,
        max_open_runs: int = 10_000,
        max_spans_per_run: int = 1_024,
        **handler_kwargs: Any,
    ) -> None:
        if handler is not None and handler_kwargs:
            raise TypeError(
                "SymfonicTracingProcessor: pass handler= or handler options, not both "
                f"(got {sorted(handler_kwargs)})"
            )
        if handler is not None and not isinstance(handler, OTelCallbackHandler):
            raise TypeError(
                "SymfonicTracingProcessor: handler must be an OTelCallbackHandler, "
                f"got {type(handler).__name__}"
            )
        self.handler = handler if handler is not None else OTelCallbackHandler(**handler_kwargs)
        self._runs = RunIndex(
            _positive_int("max_open_runs", max_open_runs),
            _positive_int("max_spans_per_run", max_spans_per_run),
        )
        # Open traces' group ids (conversation ids), oldest first: a trace whose end never
        # comes is forgotten once ``max_open_runs`` newer ones started.
        self._groups: OrderedDict[str, str] = OrderedDict()
        self._max_groups = max_open_runs
        self._failures = FailureLog()
        self._steps = StepRecorder(self.handler)
        self._lock = threading.RLock()

    # --- the SDK's interface ------------------------------------------------------------------

    def on_trace_start(self, trace: Trace) -> None:
        self._guarded("on_trace_start", self._trace_start, trace)

    def on_trace_end(self, trace: Trace) -> None:
        self._guarded("on_trace_end", self._trace_end, trace)

    def on_span_start(self, span: AgentsSpan[Any]) -> None:
        self._guarded("on_span_start", self._span_start, span)

    def on_span_end(self, span: AgentsSpan[Any]) -> None:
        self._guarded("on_span_end", self._span_end, span)

    def shutdown(self) -> None:
        """End the runs still open as ``abandoned`` (the SDK calls this at exit)."""
        self._guarded("shutdown", self._close_all)

    def force_flush(self) -> None:
        """Nothing is buffered here: spans and metrics go out through the OTel SDK's own
        processors and readers, which the application flushes."""

    # --- introspection --------------------------------------------------------------------------

    @property
    def open_runs(self) -> int:
        return len(self._runs)

    def internal_failures(self) -> dict[str, int]:
        """The processor's own failures per kind (a payload it could not read, a bug)."""
        return self._failures.counts()

    # --- traces ---------------------------------------------------------------------------------

    def _guarded(self, kind: str, work: Callable[..., None], *args: Any) -> None:
        try:
            with self._lock:
                work(*args)
        except Exception as exc:  # never into the agent
            self._failures.report(f"openai_agents.{kind}", exc)
            self.handler.adapter_failed(f"openai_agents.{kind}")

    def _trace_start(self, sdk_trace: Trace) -> None:
        group = getattr(sdk_trace, "group_id", None)
        if isinstance(group, str) and group:
            self._groups[sdk_trace.trace_id] = group
            while len(self._groups) > self._max_groups:
                self._groups.popitem(last=False)

    def _trace_end(self, sdk_trace: Trace) -> None:
        trace_id = sdk_trace.trace_id
        self._groups.pop(trace_id, None)
        run = self._runs.get(trace_id)
        if run is not None:  # task spans off: the trace was the run
            self._finish(run)
        while (left := self._runs.owner(None, trace_id)) is not None:
            self._abandon(left)  # its own end never came before its trace's

    def _close_all(self) -> None:
        for run in self._runs.drain():
            self._end_abandoned(run)

    # --- spans ----------------------------------------------------------------------------------

    def _span_start(self, span: AgentsSpan[Any]) -> None:
        kind = span.span_data.type
        if kind == "task":
            self._new_run(span, span.span_id, self._runs.owner(span.parent_id, None))
        elif kind == "agent":
            self._agent_start(span)
        else:
            run = self._runs.owner(span.parent_id, span.trace_id)
            if run is not None and self._runs.index(run, span.span_id) and kind == "function":
                self._steps.tool_start(run, span)

    def _span_end(self, span: AgentsSpan[Any]) -> None:
        kind = span.span_data.type
        run = self._runs.owner(span.span_id, None) or self._runs.owner(span.parent_id, None)
        if run is None:
            return  # a span of no run we follow (its run was evicted, or its start missed)
        if kind in ("generation", "response"):
            self._steps.model_end(run, span)
        elif kind == "function":
            self._steps.tool_end(run, span)
        elif kind == "handoff":
            self._steps.handoff(run, span)
        elif kind == "guardrail":
            self._steps.guardrail(run, span)
        if kind in ("task", "agent", "turn") and span.error is not None:
            found = read.run_error(span.error)
            if found is not None and (
                run.error is None or _ERROR_RANK[found] > _ERROR_RANK[run.error]
            ):
                run.error = found
        self._runs.release(span.span_id)
        if span.span_id == run.key:
            self._finish(run)

    def _new_run(
        self, span: AgentsSpan[Any], key: str, parent: AgentsRun | None
    ) -> AgentsRun | None:
        if self._runs.get(key) is not None:
            return None  # a redelivered start
        run = AgentsRun(
            key=key,
            trace_id=span.trace_id,
            started_ns=read.time_ns(span.started_at),
            tenant=_tenant_of(span.trace_metadata),
            conversation=self._groups.get(span.trace_id),
            parent_run=parent.key if parent is not None else None,
            parent_span=span.parent_id if parent is not None else None,
        )
        for old in self._runs.add(run):
            self._failures.report("openai_agents.run_evicted")
            self._end_abandoned(old)
        self._runs.index(run, key)
        return run

    def _agent_start(self, span: AgentsSpan[Any]) -> None:
        name = getattr(span.span_data, "name", None)
        name = name if isinstance(name, str) else ""
        owner = self._runs.owner(span.parent_id, None)
        if owner is None:  # no task span: the trace is the run (its agents take turns in it)
            owner = self._runs.get(span.trace_id) or self._new_run(span, span.trace_id, None)
        elif owner.opened and span.parent_id != owner.key:
            owner = self._new_run(span, span.span_id, owner)  # an agent run as a tool
        if owner is None:
            return
        self._runs.index(owner, span.span_id)
        if not owner.opened:
            self._open(owner, name)
        owner.agent = name or owner.agent

    def _open(self, run: AgentsRun, name: str) -> None:
        attributes: dict[str, AttributeValue] = {}
        if name:
            attributes[semconv.GEN_AI_AGENT_NAME] = name
        if run.conversation:
            attributes[semconv.GEN_AI_CONVERSATION_ID] = run.conversation
        parent: Context | None = None
        if run.parent_run is not None:
            attributes[semconv.RUN_PARENT_ID] = run.parent_run
            outer = self._runs.get(run.parent_run)
            tool = outer.tools.get(run.parent_span or "") if outer is not None else None
            if tool is not None:
                parent = trace.set_span_in_context(tool)
            else:
                parent = self.handler.run_context(run.parent_run)
        self.handler.agent_start(
            AgentStartEvent(query="", run_id=run.key),
            tenant_id=run.tenant,
            parent=parent,
            start_time_ns=run.started_ns,
            attributes=attributes,
        )
        run.opened = True

    # --- run ends -------------------------------------------------------------------------------

    def _finish(self, run: AgentsRun) -> None:
        self._runs.pop(run.key)
        self._end_tools(run)
        if not run.opened:
            self._open(run, run.agent)
        end = self._verdict(run)
        self.handler.agent_end(
            end,
            error_type=end.error_type,
            answered=None if end.outcome != "completed" else self._answered(run),
        )

    def _verdict(self, run: AgentsRun) -> AdapterRunEnd:
        duration = None
        if run.started_ns is not None:
            duration = max(time.time_ns() - run.started_ns, 0) / 1e6
        if run.error == "max_turns":  # the turn budget ran out: the model was still working
            self._bail(run, "tool_calls_with_no_text")
            return AdapterRunEnd(
                run.key,
                "error",
                duration_ms=duration,
                stop_reason=semconv.STOP_REASON_RECURSION_LIMIT,
                error_type=_MAX_TURNS_ERROR,
            )
        if run.error is not None or run.last_failed:
            error_type = (
                semconv.GUARDRAIL_ERROR_TYPE if run.error == "guardrail" else semconv.OTHER_VALUE
            )
            return AdapterRunEnd(
                run.key,
                "error",
                duration_ms=duration,
                stop_reason=semconv.STOP_REASON_ERROR,
                error_type=error_type,
            )
        if self._answered(run) is False:
            self._bail(run, "no_content_no_tool_calls")
        final = run.last.text if run.last is not None and self.handler.capture_content else None
        return AdapterRunEnd(run.key, "completed", final, duration, stop_reason=_STOP_END_TURN)

    @staticmethod
    def _answered(run: AgentsRun) -> bool | None:
        """A completed run answered unless its last model turn was blank with no tool calls
        (its ``final_output`` is empty); unknown when the SDK recorded no model output."""
        if run.last is None:
            return None
        return not (run.last.tool_calls == 0 and run.last.blank)

    def _bail(self, run: AgentsRun, reason: TerminationReason) -> None:
        shape = run.last
        self.handler.react_loop_end(
            ReactLoopEndEvent(
                run_id=run.key,
                iteration_index=max(run.calls - 1, 0),
                content_type=shape.content_type if shape is not None else "NoneType",
                has_tool_calls=shape is not None and shape.tool_calls > 0,
                tool_call_count=shape.tool_calls if shape is not None else 0,
                termination_reason=reason,
            )
        )

    def _abandon(self, run: AgentsRun) -> None:
        self._runs.pop(run.key)
        self._end_abandoned(run)

    def _end_abandoned(self, run: AgentsRun) -> None:
        self._end_tools(run)
        if run.opened:
            self.handler.agent_end(AdapterRunEnd(run.key, "abandoned"))

    def _end_tools(self, run: AgentsRun) -> None:
        for tool in run.tools.values():
            self.handler.end_tool(tool, attributes=_UNFINISHED)
        run.tools.clear()
