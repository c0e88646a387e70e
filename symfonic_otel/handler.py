"""OTelCallbackHandler: agent lifecycle events -> OpenTelemetry spans and metrics.

Layers: guarded public methods read the caller's event through small extractors (one bad field
never loses the event), resolve the run it belongs to, then record spans and metrics. The
handler never raises into the agent, never does I/O (exporters run in the SDK's processors),
and keeps bounded state: open runs live in a ``RunRegistry`` with a TTL and a cap.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, Final, TypeVar

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider

from symfonic_otel import __version__, semconv
from symfonic_otel.content import messages_json, resolve_capture, truncate
from symfonic_otel.instruments import Instruments
from symfonic_otel.labels import BoundedLabels
from symfonic_otel.logs import FailureLog, run_id_of
from symfonic_otel.pricing import ModelPrice, PriceTable
from symfonic_otel.providers import infer_provider
from symfonic_otel.recorder import recorder_for
from symfonic_otel.runs import OpenRun, RunRegistry
from symfonic_otel.tenancy import current_tenant, sanitise_tenant

__all__ = ["OTelCallbackHandler"]

_SCOPE: Final = "symfonic_otel"
_OUTCOMES: Final = frozenset({"completed", "error", "cancelled", "abandoned"})
_TERMINATION_REASONS: Final = frozenset({"tool_calls_with_no_text", "no_content_no_tool_calls"})
_CONTENT_TYPES: Final = frozenset({"str", "list", "NoneType"})
_FABRICATION_MODES: Final = frozenset({"off", "observe", "revise", "refuse"})
_FABRICATION_ACTIONS: Final = frozenset({"none", "observed", "revise_forced", "refuse_replaced"})
_MAX_MODELS: Final = 200
_MAX_NODES: Final = 32
_MAX_PROVIDERS: Final = 32
_MAX_FINDING_KINDS: Final = 16
_ATTRS_CACHE_CAP: Final = 4096
_MODEL_INFO_CAP: Final = 1024
_EMPTY_CONTEXT: Final = Context()

T = TypeVar("T")


# --- guarded extractors: read one field of a caller's event, never raise -----------------------


def _text(event: object, name: str, default: str = "") -> str:
    value = getattr(event, name, default)
    if value is None:
        return default
    return value if isinstance(value, str) else str(value)


def _opt_text(event: object, name: str) -> str | None:
    value = getattr(event, name, None)
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _number(event: object, name: str) -> float | None:
    value = getattr(event, name, None)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def _int(event: object, name: str, default: int = 0) -> int:
    value = getattr(event, name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return value


def _flag(event: object, name: str) -> bool:
    return getattr(event, name, False) is True


def _choice(value: str, allowed: frozenset[str]) -> str:
    return value if value in allowed else semconv.OTHER_VALUE


def _token_count(usage: Mapping[Any, Any], *keys: str) -> int | None:
    for key in keys:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _usage(event: object) -> tuple[int | None, int | None]:
    usage = getattr(event, "usage", None)
    if not isinstance(usage, Mapping):
        return None, None
    return (
        _token_count(usage, "input_tokens", "prompt_tokens"),
        _token_count(usage, "output_tokens", "completion_tokens"),
    )


def _parse_utc_ns(stamp: str) -> int | None:
    """ISO-8601 to epoch nanoseconds; a stamp without a zone is UTC."""
    if not stamp:
        return None
    try:
        parsed = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1_000_000) * 1_000


def _is_blank(text: str | None) -> bool:
    return text is None or not text.strip()


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
    ) -> None:
        if not isinstance(agent_name, str) or not agent_name.strip():
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

        self.agent_name = agent_name.strip()
        self.capture_content = resolve_capture(capture_content)
        self._tracer = trace.get_tracer(_SCOPE, __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter(_SCOPE, __version__, meter_provider=meter_provider)
        self._instruments = Instruments.create(meter)
        recorder = recorder_for(meter)
        self._record = recorder.record  # histograms: every value, applied at collection
        self._add = recorder.add  # counters: summed per series, one SDK add per collection
        self._prices = PriceTable(pricing)
        self._runs = RunRegistry(float(run_ttl_s), max_open_runs)
        self._failures = FailureLog()
        self._tenant_default = tenant_id
        self._tenants = BoundedLabels(max_tenants, semconv.OVERFLOW_VALUE, sanitise_tenant)
        self._models = BoundedLabels(_MAX_MODELS, semconv.OTHER_VALUE, _label_text)
        self._nodes = BoundedLabels(_MAX_NODES, semconv.OTHER_VALUE, _label_text)
        self._providers = BoundedLabels(_MAX_PROVIDERS, semconv.OTHER_VALUE, _label_text)
        self._attrs_cache: dict[tuple[object, ...], dict[str, Any]] = {}
        self._agent_attrs = {semconv.GEN_AI_AGENT_NAME: self.agent_name}
        self._agent_span_name = semconv.agent_span_name(self.agent_name)
        # Per raw model name: its label, inferred provider, price and span name, so an LLM call
        # does no regex matching, price lookup or formatting for a model seen before.
        self._model_info: dict[str, _ModelInfo] = {}

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
        """Open the run span as a child of ``parent`` (default: the current context)."""
        self._guard("agent_start", self._agent_start, event, tenant_id, parent, start_time_ns)

    def agent_end(
        self,
        event: Any,
        *,
        error_type: str | None = None,
        end_time_ns: int | None = None,
        answered: bool | None = None,
    ) -> None:
        """``answered``: the adapter's verdict (True: non-blank answer, False: blank)."""
        self._guard("agent_end", self._agent_end, event, error_type, end_time_ns, answered)

    def llm_end(
        self,
        event: Any,
        *,
        provider: str | None = None,
        start_time_ns: int | None = None,
        end_time_ns: int | None = None,
        error_type: str | None = None,
        tenant_id: str | None = None,
        parent: Context | None = None,
    ) -> None:
        """``tenant_id`` / ``parent``: tenant and parent context of a call outside any run."""
        self._guard(
            "llm_end",
            self._llm_end,
            event,
            provider,
            start_time_ns,
            end_time_ns,
            error_type,
            tenant_id,
            parent,
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
        tenant_id: str | None = None,
        parent: Context | None = None,
    ) -> Span | None:
        """Start an ``execute_tool {name}`` span under the run; None when the run is unknown.

        ``run_id=""``: a standalone tool call, under ``parent`` with tenant ``tenant_id``.
        """
        try:
            run = self._runs.get(run_id) if run_id else None
            if run is None and run_id:
                return None
            attributes: dict[str, Any] = {
                semconv.GEN_AI_OPERATION_NAME: semconv.OP_EXECUTE_TOOL,
                semconv.GEN_AI_TOOL_NAME: tool_name,
                semconv.TENANT_ID: run.tenant if run else self._resolve_tenant(tenant_id),
            }
            if run is not None:
                attributes[semconv.RUN_ID] = run.run_id
            if call_id:
                attributes[semconv.GEN_AI_TOOL_CALL_ID] = call_id
            return self._tracer.start_span(
                semconv.tool_span_name(tool_name),
                context=run.context if run is not None else (parent or _EMPTY_CONTEXT),
                kind=SpanKind.INTERNAL,
                attributes=attributes,
                start_time=start_time_ns,
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
            if error_type:
                span.set_attribute(semconv.ERROR_TYPE, error_type)
                span.set_status(Status(StatusCode.ERROR))
            span.end(end_time=end_time_ns)
        except Exception as exc:
            self._failures.report("end_tool", exc)

    def run_context(self, run_id: str) -> Context | None:
        """A context holding the run span, to parent spans of your own under the run."""
        run = self._runs.get(run_id)
        return None if run is None else run.context

    def is_open(self, run_id: str) -> bool:
        return self._runs.get(run_id) is not None

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
        """End the runs past their TTL now, rather than at the next AgentStart."""
        runs = self._runs.expire()
        for run in runs:
            self._guard("abandon", self._abandon, run)
        return len(runs)

    # --- internals -----------------------------------------------------------------------------

    def _guard(self, kind: str, work: Callable[..., None], *args: Any) -> None:
        try:
            work(*args)
        except Exception as exc:
            self._failures.report(kind, exc, run_id=run_id_of(args[0]) if args else None)
            self._drop(kind, "internal_error")

    def _drop(self, event_kind: str, reason: str) -> None:
        try:
            self._add(
                self._instruments.dropped_events,
                1,
                self._cached(
                    ("drop", event_kind, reason),
                    lambda: {
                        semconv.TELEMETRY_EVENT: event_kind,
                        semconv.TELEMETRY_DROP_REASON: reason,
                    },
                ),
            )
        except Exception as exc:  # the meter itself failing must not escape either
            self._failures.report("drop_count", exc)

    def _cached(self, key: tuple[object, ...], build: Callable[[], dict[str, Any]]) -> Any:
        """Attribute dicts are built once per label combination and reused on the hot path."""
        attrs = self._attrs_cache.get(key)
        if attrs is None:
            if len(self._attrs_cache) >= _ATTRS_CACHE_CAP:
                self._attrs_cache.clear()
            attrs = build()
            self._attrs_cache[key] = attrs
        return attrs

    def _resolve_tenant(self, explicit: str | None) -> str:
        raw = current_tenant(default=None)
        if raw is None:
            raw = explicit if explicit else self._tenant_default
        return self._tenants(raw)

    def _agent_start(
        self,
        event: Any,
        tenant_id: str | None,
        parent: Context | None,
        start_time_ns: int | None,
    ) -> None:
        run_id = _text(event, "run_id")
        if not run_id:
            self._drop("agent_start", "malformed")
            return
        if self._runs.get(run_id) is not None:
            self._drop("agent_start", "duplicate")
            return
        tenant = self._resolve_tenant(tenant_id)
        attributes: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT,
            semconv.GEN_AI_AGENT_NAME: self.agent_name,
            semconv.TENANT_ID: tenant,
            semconv.RUN_ID: run_id,
        }
        if self.capture_content:
            query, truncated = messages_json("user", _text(event, "query"))
            attributes[semconv.GEN_AI_INPUT_MESSAGES] = query
            if truncated:
                attributes[semconv.CONTENT_TRUNCATED] = True
        span = self._tracer.start_span(
            self._agent_span_name,
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start_time_ns,
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
            self._add(self._instruments.active_runs, 1, self._agent_attrs)
        for old in evicted:
            self._abandon(old)

    def _agent_end(
        self, event: Any, error_type: str | None, end_time_ns: int | None, answered: bool | None
    ) -> None:
        run_id = _text(event, "run_id")
        run = self._runs.pop(run_id) if run_id else None
        if run is None:
            reason = "duplicate" if run_id and self._runs.was_ended(run_id) else "unknown_run"
            self._drop("agent_end", reason if run_id else "malformed")
            return
        outcome = _choice(_text(event, "outcome", "completed"), _OUTCOMES)
        final_response = _opt_text(event, "final_response")
        empty = _is_blank(final_response) if answered is None else not answered
        span = run.span
        # One set_attributes: the span takes its lock and validates once, not per attribute.
        attributes: dict[str, Any] = {semconv.RUN_OUTCOME: outcome, semconv.RESPONSE_EMPTY: empty}
        if self.capture_content and final_response:
            output, truncated = messages_json("assistant", final_response)
            attributes[semconv.GEN_AI_OUTPUT_MESSAGES] = output
            if truncated:
                attributes[semconv.CONTENT_TRUNCATED] = True
        if outcome == "error":
            attributes[semconv.ERROR_TYPE] = error_type or semconv.OTHER_VALUE
        span.set_attributes(attributes)
        if outcome == "error":
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=end_time_ns)

        duration_ms = _number(event, "duration_ms")
        duration_s = (
            duration_ms / 1000.0
            if duration_ms is not None
            else max(time.monotonic() - run.started_monotonic, 0.0)
        )
        self._record_run_end(run, outcome, empty, duration_s)

    def _record_run_end(
        self, run: OpenRun, outcome: str, empty: bool | None, duration_s: float | None
    ) -> None:
        tenant = run.tenant
        instruments = self._instruments
        self._add(
            instruments.agent_runs,
            1,
            self._cached(
                ("runs", tenant, outcome, empty),
                lambda: _without_none(
                    {
                        semconv.TENANT_ID: tenant,
                        semconv.GEN_AI_AGENT_NAME: self.agent_name,
                        semconv.RUN_OUTCOME: outcome,
                        semconv.RESPONSE_EMPTY: empty,
                    }
                ),
            ),
        )
        self._add(instruments.active_runs, -1, self._agent_attrs)
        if duration_s is not None:
            self._record(
                instruments.agent_duration.record,
                duration_s,
                self._cached(
                    ("duration", tenant, outcome),
                    lambda: {
                        semconv.TENANT_ID: tenant,
                        semconv.GEN_AI_AGENT_NAME: self.agent_name,
                        semconv.RUN_OUTCOME: outcome,
                    },
                ),
            )
            self._record(
                instruments.react_iterations.record,
                run.last_iteration + 1,
                self._cached(
                    ("iterations", tenant),
                    lambda: {semconv.TENANT_ID: tenant, semconv.GEN_AI_AGENT_NAME: self.agent_name},
                ),
            )

    def _abandon(self, run: OpenRun) -> None:
        """End a run whose AgentEnd never came: outcome ``abandoned``, counted as an orphan."""
        run.span.set_attribute(semconv.RUN_OUTCOME, "abandoned")
        run.span.end()
        self._record_run_end(run, "abandoned", None, None)
        self._add(self._instruments.orphaned_runs, 1, self._agent_attrs)

    def _llm_end(
        self,
        event: Any,
        provider_hint: str | None,
        start_time_ns: int | None,
        end_time_ns: int | None,
        error_type: str | None,
        tenant_hint: str | None = None,
        parent: Context | None = None,
    ) -> None:
        run_id = _text(event, "run_id")
        run = self._runs.get(run_id) if run_id else None
        raw_model = _text(event, "model")
        info = self._model_info.get(raw_model)
        if info is None:
            info = self._describe_model(raw_model)
        model = info.label
        raw_node = _text(event, "node_name")
        node = self._nodes(raw_node) if raw_node else ""
        if provider_hint:
            provider: str | None = self._providers(provider_hint)
        else:
            provider = info.provider
        tenant = run.tenant if run is not None else self._resolve_tenant(tenant_hint)
        iteration = _int(event, "iteration_index")
        failed = _text(event, "outcome", "completed") == "error" or error_type is not None
        error_label = (error_type or semconv.OTHER_VALUE) if failed else None

        # Timing: explicit nanoseconds, else started_at_utc + duration_ms, else end now.
        if start_time_ns is not None and end_time_ns is not None:
            duration_s = max(end_time_ns - start_time_ns, 0) / 1e9
        else:
            duration_ms = _number(event, "duration_ms") or 0.0
            duration_s = duration_ms / 1000.0
            start_time_ns = _parse_utc_ns(_text(event, "started_at_utc"))
            if start_time_ns is None:
                end_time_ns = time.time_ns()
                start_time_ns = end_time_ns - int(duration_ms * 1_000_000)
            else:
                end_time_ns = start_time_ns + int(duration_ms * 1_000_000)

        input_tokens, output_tokens = _usage(event)
        price = info.price
        pricing_unknown = price is None or _flag(event, "pricing_unknown")
        cost = (
            None
            if pricing_unknown or price is None
            else price.cost(input_tokens or 0, output_tokens or 0)
        )
        is_synthesis = node == semconv.NODE_SYNTHESIZE_FALLBACK
        output = _text(event, "output")
        recovered = is_synthesis and not failed and not _is_blank(output)

        if run is not None and not is_synthesis:
            run.last_iteration = max(run.last_iteration, iteration)

        # Span: parented by run id only; an unknown run gets a root span, never the ambient one.
        attributes: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
            semconv.GEN_AI_REQUEST_MODEL: raw_model,
            semconv.NODE_NAME: node,
            semconv.REACT_ITERATION_INDEX: iteration,
            semconv.TENANT_ID: tenant,
            semconv.LLM_PRICING_UNKNOWN: pricing_unknown,
        }
        if run_id:
            attributes[semconv.RUN_ID] = run_id
        if provider:
            attributes[semconv.GEN_AI_PROVIDER_NAME] = provider
        if input_tokens is not None:
            attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] = input_tokens
        if output_tokens is not None:
            attributes[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] = output_tokens
        if cost is not None:
            attributes[semconv.LLM_COST_USD] = cost
        if is_synthesis:
            attributes[semconv.SYNTHESIS_RECOVERED] = recovered
        if self.capture_content and output:
            text, truncated = messages_json("assistant", output)
            attributes[semconv.GEN_AI_OUTPUT_MESSAGES] = text
            if truncated:
                attributes[semconv.CONTENT_TRUNCATED] = True
        if error_label:
            attributes[semconv.ERROR_TYPE] = error_label
        span = self._tracer.start_span(
            info.span_name,
            context=run.context if run is not None else (parent or _EMPTY_CONTEXT),
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=start_time_ns,
        )
        if error_label:
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=end_time_ns)
        if run is None and run_id:  # no run id at all is a standalone call, not a lost event
            self._drop("llm_end", "unknown_run")

        # Metrics.
        instruments = self._instruments
        op_attrs = self._cached(
            ("op", tenant, model, node, provider, error_label),
            lambda: _without_none(
                {
                    semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
                    semconv.GEN_AI_PROVIDER_NAME: provider,
                    semconv.GEN_AI_REQUEST_MODEL: model,
                    semconv.NODE_NAME: node,
                    semconv.TENANT_ID: tenant,
                    semconv.ERROR_TYPE: error_label,
                }
            ),
        )
        self._record(instruments.operation_duration.record, duration_s, op_attrs)
        for token_type, count in (
            (semconv.TOKEN_TYPE_INPUT, input_tokens),
            (semconv.TOKEN_TYPE_OUTPUT, output_tokens),
        ):
            if count is not None:
                self._record(
                    instruments.token_usage.record,
                    count,
                    self._cached(
                        ("tokens", tenant, model, node, provider, error_label, token_type),
                        partial(_with_token_type, op_attrs, token_type),
                    ),
                )
        self._add(
            instruments.llm_cost,
            cost or 0.0,
            self._cached(
                ("cost", tenant, model, node, pricing_unknown),
                lambda: {
                    semconv.TENANT_ID: tenant,
                    semconv.GEN_AI_REQUEST_MODEL: model,
                    semconv.NODE_NAME: node,
                    semconv.LLM_PRICING_UNKNOWN: pricing_unknown,
                },
            ),
        )
        if is_synthesis:
            self._add(
                instruments.synthesis_fallbacks,
                1,
                self._cached(
                    ("synthesis", tenant, model, recovered),
                    lambda: {
                        semconv.TENANT_ID: tenant,
                        semconv.GEN_AI_REQUEST_MODEL: model,
                        semconv.SYNTHESIS_RECOVERED: recovered,
                    },
                ),
            )

    def _describe_model(self, raw_model: str) -> _ModelInfo:
        raw_provider = infer_provider(raw_model)
        info = _ModelInfo(
            label=self._models(raw_model) if raw_model else "",
            provider=self._providers(raw_provider) if raw_provider else None,
            price=self._prices.lookup(raw_model) if raw_model else None,
            span_name=semconv.chat_span_name(raw_model),
        )
        if len(self._model_info) >= _MODEL_INFO_CAP:  # bounded even when names never repeat
            self._model_info.clear()
        self._model_info[raw_model] = info
        return info

    def _react_loop_end(self, event: Any) -> None:
        run_id = _text(event, "run_id")
        run = self._runs.get(run_id) if run_id else None
        tenant = run.tenant if run is not None else self._resolve_tenant(None)
        reason = _choice(_text(event, "termination_reason"), _TERMINATION_REASONS)
        # The bail is counted whatever else is wrong with the event: it is what operators page on.
        self._add(
            self._instruments.silent_bails,
            1,
            self._cached(
                ("bail", tenant, reason),
                lambda: {
                    semconv.TENANT_ID: tenant,
                    semconv.GEN_AI_AGENT_NAME: self.agent_name,
                    semconv.REACT_TERMINATION_REASON: reason,
                },
            ),
        )
        if run is None:
            self._drop("react_loop_end", "unknown_run" if run_id else "malformed")
            return
        run.termination_reason = reason
        run.span.set_attribute(semconv.REACT_TERMINATION_REASON, reason)
        run.span.add_event(
            semconv.EVENT_REACT_LOOP_END,
            {
                semconv.REACT_TERMINATION_REASON: reason,
                semconv.REACT_ITERATION_INDEX: _int(event, "iteration_index"),
                semconv.REACT_CONTENT_TYPE: _choice(_text(event, "content_type"), _CONTENT_TYPES),
                semconv.REACT_HAS_TOOL_CALLS: _flag(event, "has_tool_calls"),
                semconv.REACT_TOOL_CALL_COUNT: _int(event, "tool_call_count"),
            },
        )

    def _fabrication_detected(self, event: Any) -> None:
        run_id = _text(event, "run_id")
        run = self._runs.get(run_id) if run_id else None
        tenant = run.tenant if run is not None else self._resolve_tenant(None)
        mode = _choice(_text(event, "mode"), _FABRICATION_MODES)
        action = _choice(_text(event, "action_taken"), _FABRICATION_ACTIONS)
        confidence = min(_number(event, "max_finding_confidence") or 0.0, 1.0)
        instruments = self._instruments
        self._add(
            instruments.fabrication_detections,
            1,
            self._cached(
                ("fab", tenant, mode, action),
                lambda: {
                    semconv.TENANT_ID: tenant,
                    semconv.FABRICATION_MODE: mode,
                    semconv.FABRICATION_ACTION: action,
                },
            ),
        )
        self._record(
            instruments.fabrication_confidence.record,
            confidence,
            self._cached(
                ("fabconf", mode, action),
                lambda: {semconv.FABRICATION_MODE: mode, semconv.FABRICATION_ACTION: action},
            ),
        )
        if run is None:
            self._drop("fabrication_detected", "unknown_run" if run_id else "malformed")
            return
        findings = getattr(event, "findings", None)
        findings = findings if isinstance(findings, list | tuple) else []
        kinds = sorted(
            {
                str(f.get("kind"))[:64]
                for f in findings
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
        threshold = _number(event, "refuse_threshold")
        if threshold is not None:
            attributes[semconv.FABRICATION_REFUSE_THRESHOLD] = threshold
        if self.capture_content:
            draft, draft_cut = truncate(_text(event, "original_draft_preview"))
            attributes[semconv.FABRICATION_DRAFT_PREVIEW] = draft
            replacement = _opt_text(event, "replacement_preview")
            if replacement is not None:
                attributes[semconv.FABRICATION_REPLACEMENT_PREVIEW] = truncate(replacement)[0]
            attributes[semconv.FABRICATION_PREVIEW_TRUNCATED] = (
                _flag(event, "preview_truncated") or draft_cut
            )
        run.span.add_event(semconv.EVENT_FABRICATION_DETECTED, attributes)


@dataclass(frozen=True, slots=True)
class _ModelInfo:
    label: str
    provider: str | None
    price: ModelPrice | None
    span_name: str


def _label_text(raw: object) -> str:
    text = raw if isinstance(raw, str) else str(raw)
    return "".join(ch for ch in text.strip() if ch.isprintable())[:128] or semconv.OTHER_VALUE


def _with_token_type(attrs: dict[str, Any], token_type: str) -> dict[str, Any]:
    return {**attrs, semconv.GEN_AI_TOKEN_TYPE: token_type}


def _without_none(attrs: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in attrs.items() if value is not None}
