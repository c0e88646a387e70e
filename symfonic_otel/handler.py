"""OTelCallbackHandler: agent lifecycle events -> OpenTelemetry spans and metrics.

Layers, as in opentelemetry-util-genai: guarded public methods read the caller's event into a
typed record (``extract``, ``extract_steps``: one bad field never loses the event, every value
is made encodable), resolve the run it belongs to and its tenant, then hand the record to the
``SpanEmitter`` and the ``MetricEmitter`` (through the run, call and step flows). The handler
never raises into the agent, never does I/O (exporters run in the SDK's processors), and keeps
bounded state: open runs live in a ``RunRegistry`` with a TTL and a cap, swept at every metric
collection too, and closed at shutdown and exit (with their open steps)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, TracerProvider
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel._version import __version__
from symfonic_otel.core import loops
from symfonic_otel.core.call_flow import CallFlow, Hints
from symfonic_otel.core.call_inputs import InputFlow
from symfonic_otel.core.handler_core import INTERNAL_ERROR, HandlerCore, key
from symfonic_otel.core.run_flow import RunFlow
from symfonic_otel.core.runs import RunRegistry
from symfonic_otel.core.step_flow import StepFlow
from symfonic_otel.core.steps import OpenCalls
from symfonic_otel.emit.agents import AgentEmitters
from symfonic_otel.emit.budget import DEFAULT_MAX_TENANTS, agent_label_values
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.emit.models import ModelCatalogue
from symfonic_otel.emit.pricing import ModelPrice
from symfonic_otel.emit.spans import SpanEmitter
from symfonic_otel.emit.tenants import DEFAULT_TENANT_IDLE_S, ActiveTenants
from symfonic_otel.export import lifecycle
from symfonic_otel.logs import FailureLog
from symfonic_otel.options import check_handler_options, warn_if_over_limit
from symfonic_otel.protocol import SymfonicProtocol
from symfonic_otel.read.content import resolve_capture
from symfonic_otel.read.extract import ModelCall
from symfonic_otel.read.sanitise import MAX_CALL_MS, clean_label

__all__ = ["OTelCallbackHandler"]

Attributes = Mapping[str, AttributeValue] | None


class OTelCallbackHandler(SymfonicProtocol):
    """Maps Symfonic's agent events to OTel: runs, model calls, tools, nodes, pauses, checks.

    Add it to an agent's ``callbacks`` list. Events are duck-typed: Symfonic's own event objects
    and this package's ``symfonic_otel.events`` work alike. ``node_spans=True`` adds a span per
    graph node (NodeStart / NodeEnd / NodeError); off by default.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        agent_name: str = "symfonic",
        tenant_id: str | None = None,
        capture_content: bool | None = None,
        max_tenants: int = DEFAULT_MAX_TENANTS,
        run_ttl_s: float = 3600.0,
        max_open_runs: int = 10_000,
        pricing: Mapping[str, ModelPrice] | None = None,
        tenant_from_baggage: bool = False,
        node_spans: bool = False,
        tenant_idle_s: float = DEFAULT_TENANT_IDLE_S,
        tenant_histograms: bool = False,
        clock: Callable[[], float] | None = None,
        loop_threshold: int = loops.DEFAULT_LOOP_THRESHOLD,
        runaway_calls: int = loops.DEFAULT_RUNAWAY_CALLS,
    ) -> None:
        """``max_tenants`` bounds the tenants active at once; a tenant idle for more than
        ``tenant_idle_s`` gives back its slot and its series. ``tenant_histograms=True`` adds
        ``tenant.id`` to every histogram (costly: see the tenancy docs). ``clock`` (monotonic
        seconds) measures tenant idleness; tests pass their own. ``loop_threshold`` identical
        tool calls, or more than ``runaway_calls`` model calls, make a run loop (``loops``)."""
        check_handler_options(
            agent_name=agent_name,
            tenant_id=tenant_id,
            max_tenants=max_tenants,
            run_ttl_s=run_ttl_s,
            max_open_runs=max_open_runs,
            tenant_from_baggage=tenant_from_baggage,
            node_spans=node_spans,
            tenant_idle_s=tenant_idle_s,
            tenant_histograms=tenant_histograms,
            clock=clock,
        )
        self.loop_limits = loops.limits(loop_threshold, runaway_calls)
        self.agent_name = clean_label(agent_name)
        self.capture_content = resolve_capture(capture_content)
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        tracer = trace.get_tracer(semconv.SCOPE_NAME, __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter(semconv.SCOPE_NAME, __version__, meter_provider=meter_provider)
        tenants = ActiveTenants(max_tenants, float(tenant_idle_s), clock or time.monotonic)
        emitter = MetricEmitter(
            meter,
            self.agent_name,
            tenants,
            meter_provider=meter_provider,
            tenant_histograms=tenant_histograms,
        )
        self._core = core = HandlerCore(
            spans=SpanEmitter(tracer, self.agent_name, self.capture_content),
            metrics=emitter,
            models=ModelCatalogue(pricing, emitter.models, emitter.providers),
            runs=RunRegistry(float(run_ttl_s), max_open_runs),
            calls=OpenCalls(),
            failures=FailureLog(),
            tenants=tenants,
            tenant_default=tenant_id,
            tenant_from_baggage=tenant_from_baggage,
            max_run_ms=max(MAX_CALL_MS, float(run_ttl_s) * 1000.0),
            node_spans=node_spans,
            agents=AgentEmitters(emitter),
            loop_limits=self.loop_limits,
        )
        self._guard, self._open = core.guard, core.open_span
        self._runs = RunFlow(core)
        self._calls = CallFlow(core)
        self._inputs = InputFlow(core, self._calls)
        self._steps = StepFlow(core)
        # Runs past their TTL are closed at every metric collection, even with no traffic; at
        # shutdown and exit every open run is closed before the final flush.
        emitter.recorder.on_collect(self.expire_runs)
        lifecycle.register(self)
        warn_if_over_limit(max_tenants, tenant_histograms, agent_label_values())

    # --- synchronous entry points (the async ``on_*`` twins are in ``SymfonicProtocol``) -------

    def agent_start(
        self,
        event: Any,
        *,
        tenant_id: str | None = None,
        parent: Context | None = None,
        start_time_ns: int | None = None,
        attributes: Attributes = None,
    ) -> None:
        """Open the run span as a child of ``parent`` (default: the current context).

        ``tenant_id`` is the tenant the adapter was given for this run (LangChain metadata): it
        ranks below ``tenant_scope`` and above baggage and the handler default. ``attributes``
        are extra span attributes; a ``gen_ai.agent.name`` among them also renames the span and
        labels the run's counters (bounded, see ``emit.agents``)."""
        self._guard(
            "agent_start",
            self._runs.agent_start,
            event,
            tenant_id,
            parent,
            start_time_ns,
            attributes,
        )

    def agent_end(
        self,
        event: Any,
        *,
        error_type: str | None = None,
        end_time_ns: int | None = None,
        answered: bool | None = None,
        attributes: Attributes = None,
    ) -> None:
        """Close the run. ``answered`` is the caller's verdict on a completed run's answer
        (True: a non-blank answer, False: known blank); None derives it from the event."""
        self._guard(
            "agent_end", self._runs.agent_end, event, error_type, end_time_ns, answered, attributes
        )

    def llm_start(self, event: Any) -> None:
        """A model call began: its LLMEnd gets the start time, with a text delta the time to
        first chunk and, with capture on, the input messages and system prompt."""
        self._guard("llm_start", self._inputs.llm_start, event)

    def llm_pre_call(self, event: Any) -> None:
        """The wire-accurate request (``LLMPreCallEvent``): its LLMEnd's span gets the request
        parameters and, with capture on, the sent messages and the tool definitions."""
        self._guard("llm_pre_call", self._inputs.llm_pre_call, event)

    def text_delta(self, event: Any) -> None:
        self._guard("text_delta", self._calls.text_delta, event)

    def llm_end(
        self,
        event: Any,
        *,
        provider: str | None = None,
        start_time_ns: int | None = None,
        end_time_ns: int | None = None,
        error_type: str | None = None,
        parent: Context | None = None,
        tenant_id: str | None = None,
        attributes: Attributes = None,
        time_to_first_chunk_s: float | None = None,
        operation_name: str | None = None,
    ) -> None:
        """Record one model call.

        ``parent`` places its span (default: the run's innermost node, else the run; with no
        run, a root span); ``tenant_id`` applies when it belongs to no run. ``attributes`` are
        merged into the span after cleaning (content-bearing keys are the caller's to gate on
        capture); ``operation_name`` is ``chat`` (default), ``text_completion`` or
        ``embeddings``."""
        self._guard(
            "llm_end",
            self._calls.llm_end,
            event,
            Hints(
                provider,
                start_time_ns,
                end_time_ns,
                error_type,
                parent,
                tenant_id,
                attributes,
                time_to_first_chunk_s,
                operation_name,
            ),
        )

    def record_model_call(self, call: ModelCall, hints: Hints) -> None:
        """An adapter's model call, already read into its record: what ``llm_end`` does after
        reading its event (the adapter has the typed values, so they are not read twice)."""
        self._guard("llm_end", self._calls.record, call, hints)

    def react_loop_end(self, event: Any) -> None:
        self._guard("react_loop_end", self._runs.react_loop_end, event)

    def fabrication_detected(self, event: Any) -> None:
        self._guard("fabrication_detected", self._runs.fabrication_detected, event)

    def tool_call_start(self, event: Any) -> None:
        """A ``ToolCallStartEvent``: its ``executing`` phase opens the tool span."""
        self._guard("tool_call_start", self._steps.tool_call_start, event)

    def tool_result(self, event: Any) -> None:
        self._guard("tool_result", self._steps.tool_result, event)

    def node_start(self, event: Any) -> None:
        self._guard("node_start", self._steps.node_start, event)

    def node_end(self, event: Any) -> None:
        self._guard("node_end", self._steps.node_end, event, failed=False)

    def node_error(self, event: Any) -> None:
        self._guard("node_error", self._steps.node_end, event, failed=True)

    def interrupt(self, event: Any) -> None:
        self._guard("interrupt", self._runs.pause, event, semconv.PAUSE_INTERRUPT, "interrupt")

    def ask_user_question(self, event: Any) -> None:
        self._guard(
            "ask_user_question",
            self._runs.pause,
            event,
            semconv.PAUSE_ASK_USER,
            "ask_user_question",
        )

    # --- spans an adapter opens and closes itself ---------------------------------------------

    def start_tool(
        self,
        run_id: str,
        tool_name: str,
        *,
        call_id: str | None = None,
        start_time_ns: int | None = None,
        parent: Context | None = None,
        tenant_id: str | None = None,
        attributes: Attributes = None,
        arguments: object = None,
    ) -> Span | None:
        """Start an ``execute_tool {name}`` span: under ``parent`` when given, else the run's
        innermost node or the run; with neither a run nor a parent, None. ``arguments`` (None:
        unknown) are only compared in process, for loops; the adapter captures them itself."""
        return self._open(
            "start_tool",
            self._steps.start_tool,
            run_id,
            tool_name,
            call_id,
            start_time_ns,
            parent,
            tenant_id,
            attributes,
            arguments,
        )

    def tool_arguments(self, run_id: str, tool_name: str, arguments: object) -> None:
        """The arguments of a tool call started without them (read only at its end)."""
        self._guard("tool_arguments", self._steps.tool_arguments, run_id, tool_name, arguments)

    def end_tool(
        self,
        span: Span | None,
        *,
        error_type: str | None = None,
        end_time_ns: int | None = None,
        attributes: Attributes = None,
    ) -> None:
        """End a tool span (recording ``gen_ai.execute_tool.duration``) or any ``start_call``."""
        if span is not None:
            self._guard("end_tool", self._steps.end, span, error_type, end_time_ns, attributes)

    def start_call(
        self,
        operation_name: str,
        span_name: str,
        *,
        run_id: str | None = None,
        parent: Context | None = None,
        tenant_id: str | None = None,
        attributes: Attributes = None,
        start_time_ns: int | None = None,
    ) -> Span | None:
        """Start a span of any other operation (``retrieval``, ``invoke_node``...; ``""`` for
        none): under ``parent`` when given, else the run's innermost node or the run; with
        neither, a root span."""
        return self._open(
            "start_call",
            self._steps.start_call,
            operation_name,
            span_name,
            run_id,
            parent,
            tenant_id,
            attributes,
            start_time_ns,
        )

    def end_call(
        self,
        span: Span | None,
        *,
        error_type: str | None = None,
        attributes: Attributes = None,
        end_time_ns: int | None = None,
    ) -> None:
        if span is not None:
            self._guard("end_call", self._steps.end, span, error_type, end_time_ns, attributes)

    # --- runs ---------------------------------------------------------------------------------

    def run_context(self, run_id: str) -> Context | None:
        """A context holding the run span, to parent spans of your own under the run."""
        try:
            run = self._core.runs.get(key(run_id))
        except Exception:  # any id at all: never raise into the caller
            return None
        return None if run is None else run.context

    def is_open(self, run_id: str) -> bool:
        try:
            return self._core.runs.get(key(run_id)) is not None
        except Exception:
            return False

    @property
    def open_runs(self) -> int:
        return len(self._core.runs)

    def close_open_runs(self) -> int:
        """End every open run as ``abandoned`` (at shutdown); returns how many were open."""
        runs = self._core.runs.drain()
        for run in runs:
            self._guard("abandon", self._runs.abandon, run)
        return len(runs)

    def expire_runs(self) -> int:
        """End the runs past their TTL now (also done at every metric collection)."""
        runs = self._core.runs.expire()
        for run in runs:
            self._guard("abandon", self._runs.abandon, run)
        return len(runs)

    def exports_to(self, tracer_provider: object, meter_provider: object, is_global: bool) -> bool:
        """Whether this handler records into these providers (the globals when built without)."""
        if self._tracer_provider is None and self._meter_provider is None:
            return is_global
        return self._tracer_provider is tracer_provider or self._meter_provider is meter_provider

    def adapter_failed(self, event_kind: str, exc: BaseException | None = None) -> None:
        """An adapter's own failure: logged once per kind, counted in ``dropped_events``."""
        self._core.failures.report(event_kind, exc)  # never raises
        self._core.drop(event_kind, INTERNAL_ERROR)
