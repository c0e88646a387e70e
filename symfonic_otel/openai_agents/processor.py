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

from collections import OrderedDict
from typing import Any, Final

from agents.tracing import Span as AgentsSpan
from agents.tracing import Trace, TracingProcessor
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.invocation import FrameworkRun, RunBook, positive, tenant_in
from symfonic_otel.logs import FailureLog
from symfonic_otel.openai_agents import read
from symfonic_otel.openai_agents.steps import Origin, StepRecorder, origin

__all__ = ["SymfonicTracingProcessor"]

_NAME: Final = "SymfonicTracingProcessor"
_MAX_TURNS_ERROR: Final = "MaxTurnsExceeded"
# Which span error explains a run best, when several of its spans carry one.
_ERROR_RANK: Final = {"error": 0, "guardrail": 1, "max_turns": 2}


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
                f"{_NAME}: pass handler= or handler options, not both "
                f"(got {sorted(handler_kwargs)})"
            )
        if handler is not None and not isinstance(handler, OTelCallbackHandler):
            raise TypeError(
                f"{_NAME}: handler must be an OTelCallbackHandler, got {type(handler).__name__}"
            )
        positive(_NAME, "max_open_runs", max_open_runs)
        max_spans = positive(_NAME, "max_spans_per_run", max_spans_per_run)
        self.handler = handler if handler is not None else OTelCallbackHandler(**handler_kwargs)
        self._failures = FailureLog()
        self._book = RunBook(
            self.handler,
            _NAME,
            max_open_runs,
            max_keys=max_spans,
            evicted="run_evicted",
            failures=self._failures,
            prefix="openai_agents",
        )
        self._runs = self._book.runs
        # Open traces' group ids (conversation ids), oldest first: a trace whose end never
        # comes is forgotten once ``max_open_runs`` newer ones started.
        self._groups: OrderedDict[str, str] = OrderedDict()
        self._max_groups = max_open_runs
        self._steps = StepRecorder(self._book)

    # --- the SDK's interface ------------------------------------------------------------------

    def on_trace_start(self, trace: Trace) -> None:
        self._book.guard("on_trace_start", self._trace_start, trace)

    def on_trace_end(self, trace: Trace) -> None:
        self._book.guard("on_trace_end", self._trace_end, trace)

    def on_span_start(self, span: AgentsSpan[Any]) -> None:
        self._book.guard("on_span_start", self._span_start, span)

    def on_span_end(self, span: AgentsSpan[Any]) -> None:
        self._book.guard("on_span_end", self._span_end, span)

    def shutdown(self) -> None:
        """End the runs still open as ``abandoned`` (the SDK calls this at exit)."""
        self._book.guard("shutdown", self._book.close_all)

    def force_flush(self) -> None:
        """Nothing is buffered here: spans and metrics go out through the OTel SDK's own
        processors and readers, which the application flushes."""

    # --- introspection --------------------------------------------------------------------------

    @property
    def open_runs(self) -> int:
        return self._book.open_runs

    def internal_failures(self) -> dict[str, int]:
        """The processor's own failures per kind (a payload it could not read, a bug)."""
        return self._failures.counts()

    # --- traces ---------------------------------------------------------------------------------

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
            self._book.end(left.run_id, "abandoned")  # its own end never came before its trace's

    # --- spans ----------------------------------------------------------------------------------

    def _span_start(self, span: AgentsSpan[Any]) -> None:
        kind = span.span_data.type
        if kind == "task":
            self._new_run(span, span.span_id, self._runs.owner(span.parent_id))
        elif kind == "agent":
            self._agent_start(span)
        else:
            run = self._runs.owner(span.parent_id, span.trace_id)
            if run is not None and self._runs.index(run, span.span_id) and kind == "function":
                self._steps.tool_start(run, span)

    def _span_end(self, span: AgentsSpan[Any]) -> None:
        kind = span.span_data.type
        run = self._runs.owner(span.span_id) or self._runs.owner(span.parent_id)
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
            facts = origin(run)
            if found is not None and (
                facts.error is None or _ERROR_RANK[found] > _ERROR_RANK[facts.error]
            ):
                facts.error = found
            if found == "error" and facts.error_type is None:
                facts.error_type = read.raised_type()
        self._runs.release(span.span_id)
        if span.span_id == run.run_id:
            self._finish(run)

    def _new_run(
        self, span: AgentsSpan[Any], key: str, parent: FrameworkRun | None
    ) -> FrameworkRun | None:
        run = self._book.start(
            key,
            "",
            started_ns=read.time_ns(span.started_at),
            group=span.trace_id,
            open_now=False,
            facts=Origin(
                tenant=tenant_in(span.trace_metadata),
                conversation=self._groups.get(span.trace_id),
                parent_run=parent.run_id if parent is not None else None,
                parent_span=span.parent_id if parent is not None else None,
            ),
        )  # None: a redelivered start
        if run is not None:
            self._runs.index(run, key)
        return run

    def _agent_start(self, span: AgentsSpan[Any]) -> None:
        name = getattr(span.span_data, "name", None)
        name = name if isinstance(name, str) else ""
        owner = self._runs.owner(span.parent_id)
        if owner is None:  # no task span: the trace is the run (its agents take turns in it)
            owner = self._runs.get(span.trace_id) or self._new_run(span, span.trace_id, None)
        elif owner.opened and span.parent_id != owner.run_id:
            owner = self._new_run(span, span.span_id, owner)  # an agent run as a tool
        if owner is None:
            return
        self._runs.index(owner, span.span_id)
        if not owner.opened:
            owner.agent = name
            self._open(owner)
        owner.agent = name or owner.agent

    def _open(self, run: FrameworkRun) -> None:
        facts = origin(run)
        attributes: dict[str, AttributeValue] = {}
        if facts.conversation:
            attributes[semconv.GEN_AI_CONVERSATION_ID] = facts.conversation
        parent: Context | None = None
        if facts.parent_run is not None:
            attributes[semconv.RUN_PARENT_ID] = facts.parent_run
            outer = self._runs.get(facts.parent_run)
            tool = outer.tools.get(facts.parent_span or "") if outer is not None else None
            if tool is not None:
                parent = trace.set_span_in_context(tool)
            else:
                parent = self.handler.run_context(facts.parent_run)
        self._book.open(run, tenant=facts.tenant, attributes=attributes, parent=parent)

    # --- run ends -------------------------------------------------------------------------------

    def _finish(self, run: FrameworkRun) -> None:
        """How the run ended, from its spans' errors and its last model turn."""
        self._open(run)
        error = origin(run).error
        if error == "max_turns":  # the turn budget ran out: the model was still working
            self._book.end(run.run_id, "capped_raised", error_type=_MAX_TURNS_ERROR)
        elif error is not None or run.last_failed:
            guardrail = error == "guardrail"
            error_type = (
                semconv.GUARDRAIL_ERROR_TYPE
                if guardrail
                else origin(run).error_type or semconv.OTHER_VALUE
            )
            self._book.end(run.run_id, "error", error_type=error_type)
        else:
            # A completed run answered unless its last model turn was blank with no tool calls
            # (its ``final_output`` is empty); unknown when the SDK recorded no model output.
            last = run.last
            answered = None if last is None else not (last.tool_calls == 0 and last.blank)
            text = last.text if last is not None else None
            self._book.end(run.run_id, "answered", answer=text, answered=answered)
