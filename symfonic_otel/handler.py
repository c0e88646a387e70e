"""OTelCallbackHandler: agent lifecycle events -> OpenTelemetry spans and metrics.

Layers: guarded public methods read the caller's event through small extractors (``extract``:
one bad field never loses the event, every value is made encodable), resolve the run it belongs
to, then emit spans here and metrics through the ``MetricEmitter``. The handler never raises into
the agent, never does I/O (exporters run in the SDK's processors), and keeps bounded state: open
runs live in a ``RunRegistry`` with a TTL and a cap, swept at every metric collection too.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider

from symfonic_otel import __version__, lifecycle, semconv
from symfonic_otel import extract as ex
from symfonic_otel.budget import CARDINALITY_LIMIT, series_budget
from symfonic_otel.content import messages_json, resolve_capture, truncate
from symfonic_otel.emit_metrics import TERMINATION_REASONS, MetricEmitter
from symfonic_otel.labels import BoundedLabels
from symfonic_otel.logs import FailureLog, get_logger
from symfonic_otel.pricing import ModelPrice, PriceTable
from symfonic_otel.providers import infer_provider
from symfonic_otel.runs import OpenRun, RunRegistry
from symfonic_otel.sanitise import (
    MAX_CALL_MS,
    MAX_ID_BYTES,
    MAX_NAME_BYTES,
    clean_label,
    clean_text,
    run_key,
    valid_duration_ms,
)
from symfonic_otel.tenancy import resolve_tenant, sanitise_tenant

__all__ = ["OTelCallbackHandler"]

_OUTCOMES: Final = frozenset({"completed", "error", "cancelled", "abandoned"})
_CONTENT_TYPES: Final = frozenset({"str", "list", "NoneType"})
_FABRICATION_MODES: Final = frozenset({"off", "observe", "revise", "refuse"})
_FABRICATION_ACTIONS: Final = frozenset({"none", "observed", "revise_forced", "refuse_replaced"})
_NOT_LOOP_NODES: Final = frozenset(
    {semconv.NODE_SYNTHESIZE_FALLBACK, semconv.NODE_FABRICATION_REVISE}
)
# A run exit the event does not name, derived from its outcome; completed runs stay unset.
_DERIVED_STOP: Final = {
    "error": semconv.STOP_REASON_ERROR,
    "cancelled": semconv.STOP_REASON_INTERRUPTED,
}
_MAX_FINDING_KINDS: Final = 16
_MODEL_INFO_CAP: Final = 1024
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
        if not isinstance(agent_name, str) or not clean_label(agent_name):
            raise ValueError(f"agent_name must be a non-empty str, got {agent_name!r}")
        if tenant_id is not None and not isinstance(tenant_id, str):
            raise TypeError(f"tenant_id must be a str or None, got {tenant_id!r}")
        if isinstance(max_tenants, bool) or not isinstance(max_tenants, int) or max_tenants < 1:
            raise ValueError(f"max_tenants must be an int >= 1, got {max_tenants!r}")
        if (
            isinstance(run_ttl_s, bool)
            or not isinstance(run_ttl_s, int | float)
            or not math.isfinite(run_ttl_s)
            or run_ttl_s <= 0
        ):
            raise ValueError(f"run_ttl_s must be a positive number of seconds, got {run_ttl_s!r}")
        if (
            isinstance(max_open_runs, bool)
            or not isinstance(max_open_runs, int)
            or max_open_runs < 1
        ):
            raise ValueError(f"max_open_runs must be an int >= 1, got {max_open_runs!r}")
        if not isinstance(tenant_from_baggage, bool):
            raise TypeError(f"tenant_from_baggage must be a bool, got {tenant_from_baggage!r}")

        self.agent_name = clean_label(agent_name)
        self.capture_content = resolve_capture(capture_content)
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._tracer = trace.get_tracer(
            semconv.METER_NAME, __version__, tracer_provider=tracer_provider
        )
        meter = metrics.get_meter(semconv.METER_NAME, __version__, meter_provider=meter_provider)
        self._metrics = MetricEmitter(meter, self.agent_name)
        self._prices = PriceTable(pricing)
        self._runs = RunRegistry(float(run_ttl_s), max_open_runs)
        self._max_run_ms = max(MAX_CALL_MS, float(run_ttl_s) * 1000.0)
        self._failures = FailureLog()
        self._tenant_default = tenant_id
        self._tenant_from_baggage = tenant_from_baggage
        self._tenants = BoundedLabels(
            max_tenants, semconv.OVERFLOW_VALUE, sanitise_tenant, always=(semconv.TENANT_UNKNOWN,)
        )
        self._agent_span_name = semconv.agent_span_name(self.agent_name)
        # Per model name: its label, inferred provider, price and span name, so an LLM call does
        # no regex matching, price lookup or formatting for a model seen before.
        self._model_info: dict[str, _ModelInfo] = {}
        # Runs past their TTL are closed at every metric collection, even with no traffic; at
        # shutdown and exit every open run is closed before the final flush.
        self._metrics.recorder.on_collect(self.expire_runs)
        lifecycle.register(self)
        needed = max(series_budget(max_tenants).values())
        if needed > CARDINALITY_LIMIT:
            get_logger().warning(
                "symfonic_otel.series_budget_above_limit",
                max_tenants=max_tenants,
                series_per_instrument=needed,
                configured_limit=CARDINALITY_LIMIT,
                hint="use your own MeterProvider with budget.cardinality_view(limit)",
            )

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
    ) -> None:
        """Open the run span as a child of ``parent`` (default: the current context).

        ``tenant_id`` is the tenant the adapter was given for this run (LangChain metadata): it
        ranks below ``tenant_scope`` and above baggage and the handler default.
        """
        self._guard("agent_start", self._agent_start, event, tenant_id, parent, start_time_ns)

    def agent_end(
        self,
        event: Any,
        *,
        error_type: str | None = None,
        end_time_ns: int | None = None,
        answered: bool | None = None,
    ) -> None:
        """Close the run. ``answered`` is the caller's verdict on a completed run's answer
        (True: a non-blank answer, False: known blank); None derives it from the event."""
        self._guard("agent_end", self._agent_end, event, error_type, end_time_ns, answered)

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
    ) -> None:
        """Record one model call; ``parent`` / ``tenant_id`` apply when it belongs to no run."""
        self._guard(
            "llm_end",
            self._llm_end,
            event,
            _Hints(provider, start_time_ns, end_time_ns, error_type, parent, tenant_id),
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
    ) -> Span | None:
        """Start an ``execute_tool {name}`` span under the run.

        With no known run: a standalone tool span under ``parent`` when given, else None.
        """
        try:
            key = _key(run_id)
            run = self._runs.get(key) if key else None
            if run is None and parent is None:
                return None
            name = clean_text(str(tool_name)[: MAX_NAME_BYTES * 4].strip(), MAX_NAME_BYTES)
            tenant = run.tenant if run is not None else self._tenant(tenant_id)
            attributes: dict[str, Any] = {
                semconv.GEN_AI_OPERATION_NAME: semconv.OP_EXECUTE_TOOL,
                semconv.GEN_AI_TOOL_NAME: name,
                semconv.TENANT_ID: tenant,
            }
            if run is not None:
                attributes[semconv.RUN_ID] = run.run_id
            if call_id:
                attributes[semconv.GEN_AI_TOOL_CALL_ID] = clean_text(
                    str(call_id)[: MAX_ID_BYTES * 4], MAX_ID_BYTES
                )
            start, _ = ex.explicit_time(start_time_ns)
            return self._tracer.start_span(
                semconv.tool_span_name(name),
                context=run.context if run is not None else parent,
                kind=SpanKind.INTERNAL,
                attributes=attributes,
                start_time=start,
            )
        except Exception as exc:
            self._failures.report("start_tool", exc)
            return None

    def end_tool(
        self, span: Span | None, *, error_type: str | None = None, end_time_ns: int | None = None
    ) -> None:
        if span is None:
            return
        try:
            error = ex.error_type(error_type, None)
            if error:
                span.set_attribute(semconv.ERROR_TYPE, error)
                span.set_status(Status(StatusCode.ERROR))
            span.end(end_time=self._end_time(span, end_time_ns))
        except Exception as exc:
            self._failures.report("end_tool", exc)

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
            self._failures.report(kind, exc)
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
        self, event: Any, tenant_id: str | None, parent: Context | None, start_time_ns: int | None
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
        attributes: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT,
            semconv.GEN_AI_AGENT_NAME: self.agent_name,
            semconv.TENANT_ID: tenant,
            semconv.RUN_ID: run_id,
        }
        if self.capture_content:
            query = ex.text(event, "query")
            self._capture(attributes, semconv.GEN_AI_INPUT_MESSAGES, "user", query)
        span = self._tracer.start_span(
            self._agent_span_name,
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start,
        )
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
        self, event: Any, error_type: str | None, end_time_ns: int | None, answered: object
    ) -> None:
        run_id = ex.run_id(event)
        run = self._runs.pop(run_id) if run_id else None
        if run is None:
            reason = "duplicate" if run_id and self._runs.was_ended(run_id) else "unknown_run"
            self._drop("agent_end", reason if run_id else "malformed")
            return
        outcome = ex.choice(ex.text(event, "outcome", "completed"), _OUTCOMES)
        final_response = ex.opt_text(event, "final_response")
        empty = _empty_flag(outcome, final_response, answered, run)
        stop = ex.stop_reason(event) or _DERIVED_STOP.get(outcome)
        # One set_attributes: the span takes its lock and validates once, not per attribute.
        attributes: dict[str, Any] = {semconv.RUN_OUTCOME: outcome}
        if empty is not None:
            attributes[semconv.RESPONSE_EMPTY] = empty
        if stop is not None:
            attributes[semconv.RUN_STOP_REASON] = stop
        if self.capture_content and final_response:
            self._capture(attributes, semconv.GEN_AI_OUTPUT_MESSAGES, "assistant", final_response)
        if outcome == "error":
            attributes[semconv.ERROR_TYPE] = ex.error_type(error_type, event) or semconv.OTHER_VALUE
        span = run.span
        span.set_attributes(attributes)
        if outcome == "error":
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=self._end_time(span, end_time_ns))

        raw_duration = getattr(event, "duration_ms", None)
        duration_ms = valid_duration_ms(raw_duration, self._max_run_ms)
        duration_s = (
            duration_ms / 1000.0
            if duration_ms is not None
            else max(time.monotonic() - run.started_monotonic, 0.0)
        )
        self._metrics.run_ended(run.tenant, outcome, empty, duration_s, run.iterations, stop)
        if raw_duration is not None and duration_ms is None:
            self._drop("agent_end", "malformed")

    def _abandon(self, run: OpenRun) -> None:
        """End a run whose AgentEnd never came: outcome ``abandoned``, counted as an orphan."""
        run.span.set_attribute(semconv.RUN_OUTCOME, "abandoned")
        run.span.end()
        self._metrics.run_ended(run.tenant, "abandoned", None, None, run.iterations, None)
        self._metrics.orphaned()

    def _llm_end(self, event: Any, hints: _Hints) -> None:
        run_id = ex.run_id(event)
        run = self._runs.get(run_id) if run_id else None
        model = ex.name_text(event, "model")
        info = self._model_info.get(model) or self._describe_model(model)
        raw_node = ex.name_text(event, "node_name")
        node = self._metrics.nodes(raw_node) if raw_node else ""
        provider = self._metrics.providers(hints.provider) if hints.provider else info.provider
        tenant = run.tenant if run is not None else self._tenant(hints.tenant_id)
        iteration = ex.count(event, "iteration_index")
        failed = ex.text(event, "outcome", "completed") == "error" or hints.error_type is not None
        error = (ex.error_type(hints.error_type, event) or semconv.OTHER_VALUE) if failed else None
        timing = ex.call_timing(event, hints.start_time_ns, hints.end_time_ns)
        usage = ex.usage(event)
        price = info.price
        pricing_unknown = price is None or ex.flag(event, "pricing_unknown")
        cost = (
            None
            if pricing_unknown or price is None
            else price.cost_of(usage.typed, cache_in_input=usage.cache_in_input)
        )
        is_synthesis = raw_node == semconv.NODE_SYNTHESIZE_FALLBACK
        output = ex.text(event, "output")
        recovered = is_synthesis and not failed and not ex.is_blank(output)
        if run is not None and raw_node not in _NOT_LOOP_NODES:
            if raw_node == semconv.NODE_REACT:
                run.react_calls += 1
                run.last_react_index = max(run.last_react_index, iteration)
            else:
                run.other_calls += 1

        # Span: parented by run id; a call of no known run gets the caller's parent or a root.
        attributes: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
            semconv.GEN_AI_REQUEST_MODEL: model,
            semconv.NODE_NAME: raw_node,
            semconv.REACT_ITERATION_INDEX: iteration,
            semconv.TENANT_ID: tenant,
            semconv.LLM_PRICING_UNKNOWN: pricing_unknown,
        }
        if run_id:
            attributes[semconv.RUN_ID] = run_id
        if provider:
            attributes[semconv.GEN_AI_PROVIDER_NAME] = provider
        if usage.input_tokens is not None:
            attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] = usage.input_tokens
        if usage.output_tokens is not None:
            attributes[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] = usage.output_tokens
        if usage.typed.cache_read_tokens:
            attributes[semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = usage.typed.cache_read_tokens
        if usage.typed.cache_creation_tokens:
            attributes[semconv.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = (
                usage.typed.cache_creation_tokens
            )
        if cost is not None:
            attributes[semconv.LLM_COST_USD] = cost
        if is_synthesis:
            attributes[semconv.SYNTHESIS_RECOVERED] = recovered
        finish = ex.stop_reason(event)
        if finish is not None:
            attributes[semconv.GEN_AI_RESPONSE_FINISH_REASONS] = (finish,)
        if self.capture_content and output:
            self._capture(attributes, semconv.GEN_AI_OUTPUT_MESSAGES, "assistant", output)
        if error is not None:
            attributes[semconv.ERROR_TYPE] = error
        if run is not None:
            context = run.context
        else:
            context = hints.parent if hints.parent is not None else _EMPTY_CONTEXT
        span = self._tracer.start_span(
            info.span_name,
            context=context,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=timing.start_ns,
        )
        if error is not None:
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=timing.end_ns)
        if run is None and run_id:  # no run id at all is a standalone call, not a lost event
            self._drop("llm_end", "unknown_run")
        if timing.malformed:
            self._drop("llm_end", "malformed")

        self._metrics.model_call(
            tenant,
            info.label,
            node,
            provider,
            self._metrics.errors(error) if error is not None else None,
            timing.duration_s,
            (usage.input_tokens, usage.output_tokens),
            cost,
            pricing_unknown,
            recovered if is_synthesis else None,
        )

    def _describe_model(self, model: str) -> _ModelInfo:
        raw_provider = infer_provider(model)
        info = _ModelInfo(
            label=self._metrics.models(model) if model else "",
            provider=self._metrics.providers(raw_provider) if raw_provider else None,
            price=self._prices.lookup(model) if model else None,
            span_name=semconv.chat_span_name(model),
        )
        if len(self._model_info) >= _MODEL_INFO_CAP:  # bounded even when names never repeat
            self._model_info.clear()
        self._model_info[model] = info
        return info

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
        run.span.set_attribute(semconv.REACT_TERMINATION_REASON, reason)
        run.span.add_event(
            semconv.EVENT_REACT_LOOP_END,
            {
                semconv.REACT_TERMINATION_REASON: reason,
                semconv.REACT_ITERATION_INDEX: ex.count(event, "iteration_index"),
                semconv.REACT_CONTENT_TYPE: ex.choice(
                    ex.text(event, "content_type"), _CONTENT_TYPES
                ),
                semconv.REACT_HAS_TOOL_CALLS: ex.flag(event, "has_tool_calls"),
                semconv.REACT_TOOL_CALL_COUNT: ex.count(event, "tool_call_count"),
            },
        )

    def _fabrication_detected(self, event: Any) -> None:
        run_id = ex.run_id(event)
        run = self._runs.get(run_id) if run_id else None
        tenant = run.tenant if run is not None else self._tenant(None)
        mode = ex.choice(ex.text(event, "mode"), _FABRICATION_MODES)
        action = ex.choice(ex.text(event, "action_taken"), _FABRICATION_ACTIONS)
        confidence = min(ex.number(event, "max_finding_confidence") or 0.0, 1.0)
        self._metrics.fabrication(tenant, mode, action, confidence)
        if run is None:
            self._drop("fabrication_detected", "unknown_run" if run_id else "malformed")
            return
        findings = getattr(event, "findings", None)
        findings = findings if isinstance(findings, list | tuple) else []
        kinds = sorted(
            {
                clean_text(str(f.get("kind"))[:256], 64)
                for f in findings[:1024]
                if isinstance(f, Mapping) and f.get("kind") is not None
            }
        )[:_MAX_FINDING_KINDS]
        attributes: dict[str, Any] = {
            semconv.FABRICATION_MODE: mode,
            semconv.FABRICATION_ACTION: action,
            semconv.FABRICATION_MAX_CONFIDENCE: confidence,
            semconv.FABRICATION_FINDINGS: len(findings),
            semconv.FABRICATION_FINDING_KINDS: kinds,
        }
        threshold = ex.number(event, "refuse_threshold")
        if threshold is not None:
            attributes[semconv.FABRICATION_REFUSE_THRESHOLD] = threshold
        if self.capture_content:
            draft, draft_cut = truncate(ex.text(event, "original_draft_preview"))
            attributes[semconv.FABRICATION_DRAFT_PREVIEW] = draft
            replacement = ex.opt_text(event, "replacement_preview")
            if replacement is not None:
                attributes[semconv.FABRICATION_REPLACEMENT_PREVIEW] = truncate(replacement)[0]
            attributes[semconv.FABRICATION_PREVIEW_TRUNCATED] = (
                ex.flag(event, "preview_truncated") or draft_cut
            )
        run.span.add_event(semconv.EVENT_FABRICATION_DETECTED, attributes)

    @staticmethod
    def _capture(attributes: dict[str, Any], key: str, role: str, text: str) -> None:
        payload, truncated = messages_json(role, text)
        attributes[key] = payload
        if truncated:
            attributes[semconv.CONTENT_TRUNCATED] = True


@dataclass(frozen=True, slots=True)
class _ModelInfo:
    label: str
    provider: str | None
    price: ModelPrice | None
    span_name: str


@dataclass(frozen=True, slots=True)
class _Hints:
    """What an adapter knows about a model call beyond the event."""

    provider: str | None
    start_time_ns: int | None
    end_time_ns: int | None
    error_type: str | None
    parent: Context | None
    tenant_id: str | None


def _key(run_id: object) -> str:
    """A caller's run id as the registry keys it (capped; any type)."""
    if run_id is None:
        return ""
    text = run_id if isinstance(run_id, str) else str(run_id)
    return run_key(text) if text else ""


def _empty_flag(
    outcome: str, final_response: str | None, answered: object, run: OpenRun
) -> bool | None:
    """``symfonic.response.empty``: only on completed runs whose answer is known."""
    if outcome != "completed":
        return None
    if isinstance(answered, bool):
        return not answered
    if final_response is None:  # the streaming path: unknown, unless it reported a silent bail
        return True if run.termination_reason is not None else None
    return not final_response.strip()
