"""OTelCallbackHandler: agent lifecycle events -> OpenTelemetry spans and metrics.

Layers, as in opentelemetry-util-genai: guarded public methods read the caller's event into a
typed record (``extract``: one bad field never loses the event, every value is made encodable),
resolve the run it belongs to and its tenant, then hand the record to the ``SpanEmitter`` and
the ``MetricEmitter``. The handler never raises into the agent, never does I/O (exporters run in
the SDK's processors), and keeps bounded state: open runs live in a ``RunRegistry`` with a TTL
and a cap, swept at every metric collection too, and closed at shutdown and exit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.util.types import AttributeValue

from symfonic_otel import __version__, lifecycle, semconv
from symfonic_otel import extract as ex
from symfonic_otel.content import resolve_capture
from symfonic_otel.emit_metrics import TERMINATION_REASONS, MetricEmitter
from symfonic_otel.emit_spans import CallContext, SpanEmitter
from symfonic_otel.labels import BoundedLabels
from symfonic_otel.logs import FailureLog, run_id_of
from symfonic_otel.models import ModelCatalogue
from symfonic_otel.options import check_handler_options, warn_if_over_limit
from symfonic_otel.pricing import ModelPrice
from symfonic_otel.runs import OpenRun, RunRegistry
from symfonic_otel.sanitise import (
    MAX_CALL_MS,
    MAX_ID_BYTES,
    MAX_NAME_BYTES,
    clean_label,
    clean_text,
    run_key,
)
from symfonic_otel.tenancy import resolve_tenant, sanitise_tenant

__all__ = ["OTelCallbackHandler"]

_EMPTY_CONTEXT: Final = Context()


class OTelCallbackHandler:
    """Maps AgentStart / AgentEnd / LLMEnd / ReactLoopEnd / FabricationDetected to OTel.

    Add it to an agent's ``callbacks`` list. Events are duck-typed: Symfonic's own event objects
    and this package's ``symfonic_otel.events`` work alike.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        agent_name: str = "symfonic",
        tenant_id: str | None = None,
        capture_content: bool | None = None,
        max_tenants: int = 500,
        run_ttl_s: float = 3600.0,
        max_open_runs: int = 10_000,
        pricing: Mapping[str, ModelPrice] | None = None,
        tenant_from_baggage: bool = False,
    ) -> None:
        check_handler_options(
            agent_name=agent_name,
            tenant_id=tenant_id,
            max_tenants=max_tenants,
            run_ttl_s=run_ttl_s,
            max_open_runs=max_open_runs,
            tenant_from_baggage=tenant_from_baggage,
        )
        self.agent_name = clean_label(agent_name)
        self.capture_content = resolve_capture(capture_content)
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        tracer = trace.get_tracer(semconv.SCOPE_NAME, __version__, tracer_provider=tracer_provider)
        self._spans = SpanEmitter(tracer, self.agent_name, self.capture_content)
        meter = metrics.get_meter(semconv.SCOPE_NAME, __version__, meter_provider=meter_provider)
        self._metrics = MetricEmitter(meter, self.agent_name)
        self._models = ModelCatalogue(pricing, self._metrics.models, self._metrics.providers)
        self._runs = RunRegistry(float(run_ttl_s), max_open_runs)
        self._max_run_ms = max(MAX_CALL_MS, float(run_ttl_s) * 1000.0)
        self._failures = FailureLog()
        self._tenant_default = tenant_id
        self._tenant_from_baggage = tenant_from_baggage
        self._tenants = BoundedLabels(
            max_tenants, semconv.OVERFLOW_VALUE, sanitise_tenant, always=(semconv.TENANT_UNKNOWN,)
        )
        # Runs past their TTL are closed at every metric collection, even with no traffic; at
        # shutdown and exit every open run is closed before the final flush.
        self._metrics.recorder.on_collect(self.expire_runs)
        lifecycle.register(self)
        warn_if_over_limit(max_tenants)

    # --- async callbacks (the duck-typed Symfonic handler protocol) ----------------------------

    async def on_agent_start(self, event: Any) -> None:
        self.agent_start(event)

    async def on_agent_end(self, event: Any) -> None:
        self.agent_end(event)

    async def on_llm_end(self, event: Any) -> None:
        self.llm_end(event)

    async def on_react_loop_end(self, event: Any) -> None:
        self.react_loop_end(event)

    async def on_fabrication_detected(self, event: Any) -> None:
        self.fabrication_detected(event)

    # --- synchronous entry points, for adapters that know more than the event carries ----------

    def agent_start(
        self,
        event: Any,
        *,
        tenant_id: str | None = None,
        parent: Context | None = None,
        start_time_ns: int | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
    ) -> None:
        """Open the run span as a child of ``parent`` (default: the current context).

        ``tenant_id`` is the tenant the adapter was given for this run (LangChain metadata): it
        ranks below ``tenant_scope`` and above baggage and the handler default. ``attributes``
        are added to the run span as given (the caller gates content on ``capture_content``).
        """
        self._guard(
            "agent_start", self._agent_start, event, tenant_id, parent, start_time_ns, attributes
        )

    def agent_end(
        self,
        event: Any,
        *,
        error_type: str | None = None,
        end_time_ns: int | None = None,
        answered: bool | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
    ) -> None:
        """Close the run. ``answered`` is the caller's verdict on a completed run's answer
        (True: a non-blank answer, False: known blank); None derives it from the event."""
        self._guard(
            "agent_end", self._agent_end, event, error_type, end_time_ns, answered, attributes
        )

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
        attributes: Mapping[str, AttributeValue] | None = None,
        time_to_first_chunk_s: float | None = None,
        operation_name: str | None = None,
    ) -> None:
        """Record one model call; ``tenant_id`` applies when it belongs to no run, ``parent``
        places its span (default: under its run). ``attributes`` are added to the span as given;
        ``operation_name`` replaces ``chat`` (``text_completion``, ``embeddings``)."""
        self._guard(
            "llm_end",
            self._llm_end,
            event,
            _Hints(
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

    def react_loop_end(self, event: Any) -> None:
        self._guard("react_loop_end", self._react_loop_end, event)

    def fabrication_detected(self, event: Any) -> None:
        self._guard("fabrication_detected", self._fabrication_detected, event)

    def start_tool(
        self,
        run_id: str,
        tool_name: str,
        *,
        call_id: str | None = None,
        start_time_ns: int | None = None,
        parent: Context | None = None,
        tenant_id: str | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
    ) -> Span | None:
        """Start an ``execute_tool {name}`` span under the run (under ``parent`` when given).

        With no known run: a standalone tool span under ``parent`` when given, else None.
        """
        try:
            key = _key(run_id)
            run = self._runs.get(key) if key else None
            if run is None and parent is None:
                return None
            name = clean_text(str(tool_name)[: MAX_NAME_BYTES * 4].strip(), MAX_NAME_BYTES)
            tenant = run.tenant if run is not None else self._tenant(tenant_id)
            tool_call = (
                clean_text(str(call_id)[: MAX_ID_BYTES * 4], MAX_ID_BYTES) if call_id else None
            )
            start, _ = ex.explicit_time(start_time_ns)
            span = self._spans.start_tool(
                name,
                tool_call,
                tenant,
                run.run_id if run is not None else None,
                parent if parent is not None or run is None else run.context,
                start,
            )
            if attributes:
                span.set_attributes(attributes)
            return span
        except Exception as exc:
            self._failures.report("start_tool", exc)
            return None

    def end_tool(
        self,
        span: Span | None,
        *,
        error_type: str | None = None,
        end_time_ns: int | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
    ) -> None:
        if span is None:
            return
        try:
            if attributes:
                span.set_attributes(attributes)
            error = ex.error_type(error_type, None)
            if error:
                span.set_attribute(semconv.ERROR_TYPE, error)
                span.set_status(Status(StatusCode.ERROR))
            span.end(end_time=self._end_time(span, end_time_ns))
        except Exception as exc:
            self._failures.report("end_tool", exc)

    def start_call(
        self,
        operation_name: str,
        span_name: str,
        *,
        run_id: str | None = None,
        parent: Context | None = None,
        tenant_id: str | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
        start_time_ns: int | None = None,
    ) -> Span | None:
        """Start a span of any other operation (retrieval, a graph node, ...) under the run.

        With no known run: under ``parent`` when given, else a root span.
        """
        try:
            key = _key(run_id)
            run = self._runs.get(key) if key else None
            tenant = run.tenant if run is not None else self._tenant(tenant_id)
            span_attributes: dict[str, AttributeValue] = {
                semconv.GEN_AI_OPERATION_NAME: operation_name,
                semconv.TENANT_ID: tenant,
            }
            if run is not None:
                span_attributes[semconv.RUN_ID] = run.run_id
            if attributes:
                span_attributes.update(attributes)
            where = parent if parent is not None else run.context if run is not None else None
            start, _ = ex.explicit_time(start_time_ns)
            return self._spans.start_call(
                clean_text(str(span_name)[: MAX_NAME_BYTES * 4], MAX_NAME_BYTES),
                _CLIENT_OPERATIONS.get(operation_name, SpanKind.INTERNAL),
                span_attributes,
                where if where is not None else _EMPTY_CONTEXT,
                start,
            )
        except Exception as exc:
            self._failures.report("start_call", exc)
            return None

    def end_call(
        self,
        span: Span | None,
        *,
        error_type: str | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
        end_time_ns: int | None = None,
    ) -> None:
        self.end_tool(span, error_type=error_type, end_time_ns=end_time_ns, attributes=attributes)

    def run_context(self, run_id: str) -> Context | None:
        """A context holding the run span, to parent spans of your own under the run."""
        try:
            run = self._runs.get(_key(run_id))
        except Exception:  # any id at all: never raise into the caller
            return None
        return None if run is None else run.context

    def is_open(self, run_id: str) -> bool:
        try:
            return self._runs.get(_key(run_id)) is not None
        except Exception:
            return False

    @property
    def open_runs(self) -> int:
        return len(self._runs)

    def close_open_runs(self) -> int:
        """End every open run as ``abandoned`` (at shutdown); returns how many were open."""
        runs = self._runs.drain()
        for run in runs:
            self._guard("abandon", self._abandon, run)
        return len(runs)

    def expire_runs(self) -> int:
        """End the runs past their TTL now (also done at every metric collection)."""
        runs = self._runs.expire()
        for run in runs:
            self._guard("abandon", self._abandon, run)
        return len(runs)

    def exports_to(self, tracer_provider: object, meter_provider: object, is_global: bool) -> bool:
        """Whether this handler records into these providers (the globals when built without)."""
        if self._tracer_provider is None and self._meter_provider is None:
            return is_global
        return self._tracer_provider is tracer_provider or self._meter_provider is meter_provider

    # --- internals -----------------------------------------------------------------------------

    def _guard(self, kind: str, work: Callable[..., None], *args: Any) -> None:
        try:
            work(*args)
        except Exception as exc:
            self._failures.report(kind, exc, run_id=run_id_of(args[0]) if args else None)
            self._drop(kind, "internal_error")

    def _drop(self, event_kind: str, reason: str) -> None:
        try:
            self._metrics.dropped(event_kind, reason)
        except Exception as exc:  # the meter itself failing must not escape either
            self._failures.report("drop_count", exc)

    def _tenant(self, explicit: object) -> str:
        raw = resolve_tenant(
            explicit, default=self._tenant_default, from_baggage=self._tenant_from_baggage
        )
        tenant = self._tenants(raw)
        self._metrics.seed_tenant(tenant)
        return tenant

    def _end_time(self, span: Any, end_time_ns: int | None) -> int | None:
        """An explicit end time, when it is encodable and not before the span's start."""
        end, _ = ex.explicit_time(end_time_ns)
        start = getattr(span, "start_time", None)
        if end is not None and isinstance(start, int) and end < start:
            return None
        return end

    def _agent_start(
        self,
        event: Any,
        tenant_id: str | None,
        parent: Context | None,
        start_time_ns: int | None,
        attributes: Mapping[str, AttributeValue] | None,
    ) -> None:
        run_id = ex.run_id(event)
        if not run_id:
            self._drop("agent_start", "malformed")
            return
        if self._runs.get(run_id) is not None or self._runs.was_ended(run_id):
            self._drop("agent_start", "duplicate")  # a redelivered start opens no phantom run
            return
        tenant = self._tenant(tenant_id)
        start, bad_time = ex.explicit_time(start_time_ns)
        query = ex.text(event, "query") if self._spans.capture_content else ""
        span = self._spans.start_run(run_id, tenant, query, parent, start)
        if attributes:
            span.set_attributes(attributes)
        run = OpenRun(
            run_id=run_id,
            span=span,
            context=trace.set_span_in_context(span, _EMPTY_CONTEXT),
            tenant=tenant,
            started_monotonic=time.monotonic(),
        )
        added, evicted = self._runs.add(run)
        if not added:  # lost a race with a concurrent start of the same id
            span.end()
            self._drop("agent_start", "duplicate")
        else:
            self._metrics.run_started()
        for old in evicted:
            self._abandon(old)
        if bad_time:
            self._drop("agent_start", "malformed")

    def _agent_end(
        self,
        event: Any,
        error_type: str | None,
        end_time_ns: int | None,
        answered: object,
        attributes: Mapping[str, AttributeValue] | None,
    ) -> None:
        run_id = ex.run_id(event)
        run = self._runs.pop(run_id) if run_id else None
        if run is None:
            reason = "duplicate" if run_id and self._runs.was_ended(run_id) else "unknown_run"
            self._drop("agent_end", reason if run_id else "malformed")
            return
        end = ex.run_end(event, answered, run.termination_reason is not None, self._max_run_ms)
        if attributes:
            run.span.set_attributes(attributes)
        self._spans.end_run(
            run.span,
            end.outcome,
            end.empty,
            end.stop_reason,
            ex.error_type(error_type, event) if end.outcome == "error" else None,
            end.final_response,
            self._end_time(run.span, end_time_ns),
        )
        duration_s = (
            end.duration_ms / 1000.0
            if end.duration_ms is not None
            else max(time.monotonic() - run.started_monotonic, 0.0)
        )
        self._metrics.run_ended(
            run.tenant, end.outcome, end.empty, duration_s, run.iterations, end.stop_reason
        )
        if end.malformed:
            self._drop("agent_end", "malformed")

    def _abandon(self, run: OpenRun) -> None:
        """End a run whose AgentEnd never came: outcome ``abandoned``, counted as an orphan."""
        self._spans.abandon_run(run.span)
        self._metrics.run_ended(run.tenant, "abandoned", None, None, run.iterations, None)
        self._metrics.orphaned()

    def _llm_end(self, event: Any, hints: _Hints) -> None:
        call = ex.model_call(event, hints.start_time_ns, hints.end_time_ns, hints.error_type)
        run = self._runs.get(call.run_id) if call.run_id else None
        info = self._models(call.model)
        node = self._metrics.nodes(call.node) if call.node else ""
        provider = self._metrics.providers(hints.provider) if hints.provider else info.provider
        tenant = run.tenant if run is not None else self._tenant(hints.tenant_id)
        price = info.price
        pricing_unknown = price is None or call.pricing_unknown
        cost = (
            None
            if pricing_unknown or price is None
            else price.cost(
                call.usage.uncached_input(),
                call.usage.output_tokens or 0,
                call.usage.cache_read_tokens,
                call.usage.cache_creation_tokens,
            )
        )
        recovered = (
            call.error_type is None and not ex.is_blank(call.output)
            if call.node == semconv.NODE_SYNTHESIZE_FALLBACK
            else None
        )
        if run is not None:
            run.count_call(call.node, call.iteration)
            parent = hints.parent if hints.parent is not None else run.context
        else:  # a call of no known run: the adapter's parent, else a root span (never ambient)
            parent = hints.parent if hints.parent is not None else _EMPTY_CONTEXT
        self._spans.model_call(
            call,
            CallContext(
                call.run_id,
                tenant,
                provider,
                pricing_unknown,
                cost,
                recovered,
                info.span_name,
                parent,
                hints.attributes,
                hints.time_to_first_chunk_s,
                hints.operation_name,
            ),
        )
        if run is None and call.run_id:  # no run id at all is a standalone call, not a loss
            self._drop("llm_end", "unknown_run")
        if call.timing.malformed:
            self._drop("llm_end", "malformed")
        self._metrics.model_call(
            tenant,
            info.label,
            node,
            provider,
            self._metrics.errors(call.error_type) if call.error_type is not None else None,
            call.timing.duration_s,
            (call.usage.input_tokens, call.usage.output_tokens),
            cost,
            pricing_unknown,
            recovered,
        )

    def _react_loop_end(self, event: Any) -> None:
        run_id = ex.run_id(event)
        run = self._runs.get(run_id) if run_id else None
        tenant = run.tenant if run is not None else self._tenant(None)
        reason = ex.choice(ex.text(event, "termination_reason"), TERMINATION_REASONS)
        # The bail is counted whatever else is wrong with the event: it is what operators page on.
        self._metrics.silent_bail(tenant, reason)
        if run is None:
            self._drop("react_loop_end", "unknown_run" if run_id else "malformed")
            return
        run.termination_reason = reason
        self._spans.loop_end(run.span, reason, ex.loop_end_attributes(event, reason))

    def _fabrication_detected(self, event: Any) -> None:
        run_id = ex.run_id(event)
        run = self._runs.get(run_id) if run_id else None
        tenant = run.tenant if run is not None else self._tenant(None)
        mode = ex.choice(ex.text(event, "mode"), ex.FABRICATION_MODES)
        action = ex.choice(ex.text(event, "action_taken"), ex.FABRICATION_ACTIONS)
        confidence = min(ex.number(event, "max_finding_confidence") or 0.0, 1.0)
        self._metrics.fabrication(tenant, mode, action, confidence)
        if run is None:
            self._drop("fabrication_detected", "unknown_run" if run_id else "malformed")
            return
        threshold = ex.number(event, "refuse_threshold")
        self._spans.fabrication(run.span, mode, action, confidence, event, threshold)


@dataclass(slots=True)
class _Hints:
    """What an adapter knows about a model call beyond the event."""

    provider: str | None
    start_time_ns: int | None
    end_time_ns: int | None
    error_type: str | None
    parent: Context | None
    tenant_id: str | None
    attributes: Mapping[str, AttributeValue] | None = None
    time_to_first_chunk_s: float | None = None
    operation_name: str | None = None


# Operations that call out of the process: their spans are CLIENT spans.
_CLIENT_OPERATIONS: Final = {
    semconv.OP_CHAT: SpanKind.CLIENT,
    "text_completion": SpanKind.CLIENT,
    "embeddings": SpanKind.CLIENT,
    "retrieval": SpanKind.CLIENT,
}


def _key(run_id: object) -> str:
    """A caller's run id as the registry keys it (capped; any type)."""
    if run_id is None:
        return ""
    text = run_id if isinstance(run_id, str) else str(run_id)
    return run_key(text) if text else ""
