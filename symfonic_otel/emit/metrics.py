"""Metric emitter: records of runs and calls -> measurements, inside the series budget.

Only the counters the silent-bail page and the per-tenant panels need carry ``tenant.id``
(runs, silent bails, synthesis fallbacks, stop reasons, cost, tokens, fabrication actions);
they are kept per tenant in ``TenantCounters`` and forgotten when the tenant goes idle.
Histograms carry model, operation, node and error type, not the tenant, unless the handler was
built with ``tenant_histograms=True``; their exemplars still lead to a trace naming the tenant.

Every label is bounded here: open values (model, node, provider, error type, pass-through stop
reasons) are capped per value, detailed sets per instrument (``DetailPool``) or per tenant; past
a cap a value folds into ``_OTHER`` and the tenant label stays (see ``budget``). A tenant taking a
slot gets the series the shipped alerts divide by at zero, so ``increase()`` counts its first
bail and a tenant without bails reads 0 rather than nothing.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Final

from opentelemetry.metrics import Meter, MeterProvider

from symfonic_otel import semconv
from symfonic_otel.emit import metric_attrs, tenant_hub
from symfonic_otel.emit.budget import (
    DETAIL_POOL,
    MAX_ERROR_TYPES,
    MAX_PASSTHROUGH_STOP_REASONS,
    TENANT_DETAIL_SETS,
    DetailPool,
    histograms_per_tenant,
)
from symfonic_otel.emit.call_histograms import CallHistograms
from symfonic_otel.emit.instruments import Instruments
from symfonic_otel.emit.labels import BoundedLabels
from symfonic_otel.emit.loop_metrics import LoopMetrics
from symfonic_otel.emit.recorder import DeferredRecorder, SpanLink, recorder_for
from symfonic_otel.emit.tenant_counters import TenantCounters
from symfonic_otel.emit.tenants import ActiveTenants
from symfonic_otel.emit.vocabulary import (
    FABRICATION_PAIRS,
    KNOWN_STOP_REASONS,
    MAX_MODELS,
    MAX_NODES,
    MAX_PROVIDERS,
    MAX_TOOLS,
    OTHER,
    SEEDED_RUNS,
    SEEDED_STOP_REASONS,
    TERMINATION_REASONS,
    label_or_other,
)
from symfonic_otel.environment import sdk_disabled

_ATTRS_CACHE_CAP: Final = 4096
# Tags of the attribute-cache keys that are not keyed by their builder (``_built``).
_OP_KEY: Final = "op"
_TOKENS_KEY: Final = "tokens"
_TOOL_KEY: Final = "tool"
_RUNS: Final = semconv.AGENT_RUNS.name
_BAILS: Final = semconv.SILENT_BAILS.name
_STOPS: Final = semconv.STOP_REASONS.name
_COST: Final = semconv.LLM_COST.name
_TOKENS: Final = semconv.LLM_TOKENS.name
_SYNTHESIS: Final = semconv.SYNTHESIS_FALLBACKS.name
_FABRICATION: Final = semconv.FABRICATION_DETECTIONS.name


def _count_nothing(*args: object) -> None:
    """The per-tenant count under ``OTEL_SDK_DISABLED=true``."""


class MetricEmitter:
    """One handler's measurements: bounded labels, cached attribute sets, per-tenant counters."""

    def __init__(
        self,
        meter: Meter,
        agent_name: str,
        tenants: ActiveTenants | None = None,
        *,
        meter_provider: MeterProvider | None = None,
        tenant_histograms: bool = False,
    ) -> None:
        self.instruments = Instruments.create(meter)
        self.recorder: DeferredRecorder = recorder_for(meter)
        self._record = self.recorder.record  # histograms: every value, applied at collection
        self._add = self.recorder.add  # counters: summed per series, one SDK add per collection
        self.tenants = tenants if tenants is not None else ActiveTenants()
        self.counters = TenantCounters(self.tenants, TENANT_DETAIL_SETS)
        # Per-tenant counters: this package's own totals, reported to the provider's readers.
        self._count: Callable[..., None] = self.counters.add
        # The call histograms, where the provider's reader hook serves them (else SDK ones).
        self.call_histograms: CallHistograms | None = None
        if sdk_disabled():  # the SDK's off switch turns these off too: no reader sees them
            self._count = _count_nothing
        else:
            hub = tenant_hub.register(self.counters, meter, meter_provider)
            self.call_histograms = hub.call_histograms  # pragma: no mutate: same points as SDK
        # Once this emitter (its handler) is gone, its totals are reported for one idle time.
        weakref.finalize(self, self.counters.orphan)
        self.tenant_histograms = histograms_per_tenant(tenant_histograms)
        self._attrs = metric_attrs.AgentAttrs(agent_name)
        self.agent_attrs: dict[str, Any] = {semconv.GEN_AI_AGENT_NAME: agent_name}
        self._cache: dict[tuple[object, ...], dict[str, Any]] = {}
        self.models = BoundedLabels(MAX_MODELS, OTHER, label_or_other)
        self.nodes = BoundedLabels(MAX_NODES, OTHER, label_or_other)
        self.providers = BoundedLabels(MAX_PROVIDERS, OTHER, label_or_other)
        self.errors = BoundedLabels(MAX_ERROR_TYPES, OTHER, label_or_other)
        self._stop_values = BoundedLabels(MAX_PASSTHROUGH_STOP_REASONS, OTHER, label_or_other)
        self.tools = BoundedLabels(MAX_TOOLS, OTHER, label_or_other)
        self._tool_pool = DetailPool(DETAIL_POOL)
        self._op_pool = DetailPool(DETAIL_POOL)  # shared by operation duration and token usage
        self.loops = LoopMetrics(self)

    def _histogram_tenant(self, tenant: str) -> str | None:
        return tenant if self.tenant_histograms else None

    # --- tenants ----------------------------------------------------------------------------

    def seed_tenant(self, tenant: str) -> None:
        """Create the tenant's alert series at zero when it takes a slot (again)."""
        if not self.counters.knows(tenant):
            self._seed(tenant)

    def _seed(self, tenant: str) -> None:
        count, attrs, built = self._count, self._attrs, self._built
        for outcome, empty in SEEDED_RUNS:
            count(_RUNS, tenant, built(attrs.runs, tenant, outcome, empty, False), 0)
        for reason in sorted(TERMINATION_REASONS):
            count(_BAILS, tenant, built(attrs.bail, tenant, reason), 0)
        for stop in SEEDED_STOP_REASONS:
            count(_STOPS, tenant, built(attrs.stop, tenant, stop), 0)
        self.loops.seed(tenant)

    # --- runs -------------------------------------------------------------------------------

    def run_started(self) -> None:
        self._add(self.instruments.active_runs, 1, self.agent_attrs)

    def run_ended(
        self,
        tenant: str,
        outcome: str,
        empty: bool | None,
        duration_s: float | None,
        iterations: int,
        stop_reason: str | None,
        paused: bool = False,
        link: SpanLink | None = None,
    ) -> None:
        instruments, attrs = self.instruments, self._attrs
        runs = self._built(attrs.runs, tenant, outcome, empty, paused)
        # An errored run's trace is its series' exemplar.
        self._count(_RUNS, tenant, runs, 1, None, link if outcome == "error" else None)
        self._add(instruments.active_runs, -1, self.agent_attrs)
        if stop_reason is not None:
            self._stop(tenant, stop_reason)
        if duration_s is None:
            return
        scope = self._histogram_tenant(tenant)
        self._record(
            instruments.agent_duration,
            duration_s,
            self._built(attrs.duration, scope, outcome),
            link,
        )
        self._record(
            instruments.react_iterations,
            iterations,
            self._built(attrs.iterations, scope),
        )

    def orphaned(self) -> None:
        self._add(self.instruments.orphaned_runs, 1, self.agent_attrs)

    def silent_bail(self, tenant: str, reason: str, link: SpanLink | None = None) -> None:
        """One bail; ``link``, the run's span, becomes the tenant's bail exemplar."""
        bail = self._built(self._attrs.bail, tenant, reason)
        self._count(_BAILS, tenant, bail, 1, None, link)

    def fabrication(self, tenant: str, mode: str, action: str, confidence: float) -> None:
        if (mode, action) not in FABRICATION_PAIRS:
            mode = action = OTHER
        self._count(
            _FABRICATION,
            tenant,
            self._built(metric_attrs.fabrication, tenant, mode, action),
            1,
        )
        self._record(
            self.instruments.fabrication_confidence,
            confidence,
            self._built(metric_attrs.fabrication, None, mode, action),
        )

    def dropped(self, event_kind: str, reason: str) -> None:
        self._add(
            self.instruments.dropped_events,
            1,
            self._built(metric_attrs.drop, event_kind, reason),
        )

    # --- model calls ------------------------------------------------------------------------

    def model_call(
        self,
        tenant: str,
        model: str,
        node: str,
        provider: str | None,
        error: str | None,
        duration_s: float | None,
        tokens: tuple[int | None, int | None],
        cost: float | None,
        pricing_unknown: bool,
        recovered: bool | None,
        operation: str = semconv.OP_CHAT,
        ttfc_s: float | None = None,
        link: SpanLink | None = None,
    ) -> None:
        """One model call; ``recovered`` is None unless it was a synthesis call.

        Histogram attribute sets are cached per *requested* label combination, so the budget is
        consulted once per combination: a pool's decision never changes (admitted keys stay
        admitted, and a pool that refused once is full for good). Histogram values carry
        ``link``, the call's span, as their exemplar.
        """
        instruments = self.instruments
        cache = self._cache
        scope = self._histogram_tenant(tenant)
        op_attrs = cache.get((_OP_KEY, scope, operation, model, node, provider, error))
        if op_attrs is None:
            op_attrs = self._op_set(scope, operation, model, node, provider, error)
        if duration_s is not None:
            self._record(instruments.operation_duration, duration_s, op_attrs, link)
        if ttfc_s is not None:  # its sets are those of a successful call (no error.type)
            ttfc_attrs = op_attrs
            if error is not None:
                ttfc_attrs = cache.get(
                    (_OP_KEY, scope, operation, model, node, provider, None)
                ) or (self._op_set(scope, operation, model, node, provider, None))
            self._record(instruments.time_to_first_chunk, ttfc_s, ttfc_attrs, link)
        for token_type, amount in zip(
            (semconv.TOKEN_TYPE_INPUT, semconv.TOKEN_TYPE_OUTPUT), tokens, strict=True
        ):
            if amount is None:
                continue
            self._record(
                instruments.token_usage,
                amount,
                self._cached(
                    (_TOKENS_KEY, scope, operation, model, node, provider, error, token_type),
                    metric_attrs.tokens,
                    op_attrs,
                    token_type,
                ),
                link,
            )
            self._count(
                _TOKENS,
                tenant,
                self._built(metric_attrs.tenant_tokens, tenant, model, token_type),
                amount,
                self._built(metric_attrs.tenant_tokens, tenant, OTHER, token_type),
            )
        self._count(
            _COST,
            tenant,
            self._built(metric_attrs.cost, tenant, model, node, pricing_unknown),
            cost or 0.0,
            self._built(metric_attrs.cost, tenant, OTHER, OTHER, pricing_unknown),
        )
        if recovered is not None:
            self._count(
                _SYNTHESIS,
                tenant,
                self._built(metric_attrs.synthesis, tenant, model, recovered),
                1,
                self._built(metric_attrs.synthesis, tenant, OTHER, recovered),
            )

    def tool_call(
        self,
        tenant: str,
        tool: str,
        error: str | None,
        duration_s: float,
        link: SpanLink | None,
    ) -> None:
        """``gen_ai.execute_tool.duration``; ``tool`` and ``error`` are raw (bounded here)."""
        scope = self._histogram_tenant(tenant)
        attrs = self._cache.get((_TOOL_KEY, scope, tool, error))
        if attrs is None:
            label = self.tools(tool) if tool else OTHER
            error_label = self.errors(error) if error is not None else None
            key: tuple[Any, ...] = (scope, label, error_label)
            if not self._tool_pool.admit(key):
                key = (scope, OTHER, OTHER if error is not None else None)
            attrs = self._remember((_TOOL_KEY, scope, tool, error), self._attrs.tool(*key))
        self._record(self.instruments.tool_duration, duration_s, attrs, link)

    def _op_set(
        self,
        tenant: str | None,
        operation: str,
        model: str,
        node: str,
        provider: str | None,
        error: str | None,
    ) -> dict[str, Any]:
        """First call of a histogram label combination: admit it, or fold it."""
        key: tuple[Any, ...] = (tenant, operation, model, node, provider, error)
        if not self._op_pool.admit(key):
            key = (tenant, operation, OTHER, OTHER, OTHER, OTHER if error is not None else None)
        return self._remember(
            (_OP_KEY, tenant, operation, model, node, provider, error), metric_attrs.operation(*key)
        )

    def _remember(self, key: tuple[object, ...], attrs: dict[str, Any]) -> dict[str, Any]:
        if len(self._cache) >= _ATTRS_CACHE_CAP:  # pragma: no mutate: as in _cached
            self._cache.clear()
        self._cache[key] = attrs
        return attrs

    # --- labels and attribute sets ----------------------------------------------------------

    def _stop(self, tenant: str, raw: str) -> None:
        """Known exits have a set per tenant; pass-through values are detailed (capped) sets."""
        attrs = self._attrs
        if raw in KNOWN_STOP_REASONS:
            self._count(_STOPS, tenant, self._built(attrs.stop, tenant, raw), 1)
            return
        value = self._stop_values(raw)
        self._count(
            _STOPS,
            tenant,
            self._built(attrs.stop, tenant, value),
            1,
            None if value == OTHER else self._built(attrs.stop, tenant, OTHER),
        )

    def _built(self, build: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
        """``_cached``, keyed by the builder and its arguments (no tag to keep keys apart)."""
        return self._cached((build, *args), build, *args)

    def _cached(
        self, key: tuple[object, ...], build: Callable[..., dict[str, Any]], *args: Any
    ) -> dict[str, Any]:
        """Attribute dicts are built once per label combination and reused on the hot path.

        A miss only builds an equal dict (the same series, the same sums) and the cap bounds
        memory one entry either way: no metric tells the lookup, the store or the cap apart.
        """
        attrs = self._cache.get(key)  # pragma: no mutate: see the docstring
        if attrs is None:
            if len(self._cache) >= _ATTRS_CACHE_CAP:  # pragma: no mutate: see the docstring
                self._cache.clear()
            attrs = build(*args)
            self._cache[key] = attrs  # pragma: no mutate: see the docstring
        return attrs
