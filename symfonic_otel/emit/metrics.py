"""Metric emitter: records of runs and calls -> measurements, inside the series budget.

Everything a label can be built from is bounded here: open label values (model, node, provider,
error type, pass-through stop reasons) are capped per value, and detailed attribute sets are
capped per instrument by a ``DetailPool``; past either cap a value folds into ``_OTHER`` while
the tenant label stays, so each call is still counted for its tenant (see ``budget``). When a
tenant is first seen, its counter series are created at zero, so Prometheus' ``rate()`` counts
its first real increment and a tenant without bails reads 0 rather than nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Final

from opentelemetry.metrics import Meter

from symfonic_otel import semconv
from symfonic_otel.emit import metric_attrs
from symfonic_otel.emit.budget import (
    DETAIL_POOL,
    MAX_ERROR_TYPES,
    MAX_PASSTHROUGH_STOP_REASONS,
    STOP_REASON_POOL,
    DetailPool,
)
from symfonic_otel.emit.instruments import Instruments
from symfonic_otel.emit.labels import BoundedLabels
from symfonic_otel.emit.recorder import DeferredRecorder, SpanLink, recorder_for
from symfonic_otel.read.sanitise import clean_label

OTHER: Final = semconv.OTHER_VALUE
MAX_MODELS: Final = 200
MAX_NODES: Final = 32
MAX_PROVIDERS: Final = 32
MAX_TOOLS: Final = 200
_ATTRS_CACHE_CAP: Final = 4096
TERMINATION_REASONS: Final = frozenset({"tool_calls_with_no_text", "no_content_no_tool_calls"})
FABRICATION_PAIRS: Final = frozenset(
    {
        ("off", "none"),
        ("observe", "observed"),
        ("observe", "none"),
        ("revise", "revise_forced"),
        ("revise", "observed"),
        ("revise", "none"),
        ("refuse", "refuse_replaced"),
        ("refuse", "observed"),
        ("refuse", "none"),
    }
)
_KNOWN_STOP_REASONS: Final = frozenset(semconv.STOP_REASON_VALUES)
# Series created at zero for a new tenant: runs by outcome (and empty flag), silent bails by
# termination reason, run exits by stop reason, and the fabrication action of each check mode.
_SEEDED_RUNS: Final[tuple[tuple[str, bool | None], ...]] = (  # not paused
    ("completed", False),
    ("completed", True),
    ("completed", None),
    ("error", None),
    ("cancelled", None),
    ("abandoned", None),
)
_SEEDED_FABRICATION: Final = (
    ("observe", "observed"),
    ("revise", "revise_forced"),
    ("refuse", "refuse_replaced"),
)


def _label_or_other(raw: object) -> str:
    return clean_label(raw) or OTHER


class MetricEmitter:
    """One handler's measurements: bounded labels, cached attribute sets, zero-seeded tenants."""

    def __init__(self, meter: Meter, agent_name: str) -> None:
        self.instruments = Instruments.create(meter)
        self.recorder: DeferredRecorder = recorder_for(meter)
        self._record = self.recorder.record  # histograms: every value, applied at collection
        self._add = self.recorder.add  # counters: summed per series, one SDK add per collection
        self._attrs = metric_attrs.AgentAttrs(agent_name)
        self.agent_attrs: dict[str, Any] = {semconv.GEN_AI_AGENT_NAME: agent_name}
        self._cache: dict[tuple[object, ...], dict[str, Any]] = {}
        self.models = BoundedLabels(MAX_MODELS, OTHER, _label_or_other)
        self.nodes = BoundedLabels(MAX_NODES, OTHER, _label_or_other)
        self.providers = BoundedLabels(MAX_PROVIDERS, OTHER, _label_or_other)
        self.errors = BoundedLabels(MAX_ERROR_TYPES, OTHER, _label_or_other)
        self._stop_values = BoundedLabels(MAX_PASSTHROUGH_STOP_REASONS, OTHER, _label_or_other)
        self.tools = BoundedLabels(MAX_TOOLS, OTHER, _label_or_other)
        self._tool_pool = DetailPool(DETAIL_POOL)
        self._op_pool = DetailPool(DETAIL_POOL)  # shared by operation duration and token usage
        self._cost_pool = DetailPool(DETAIL_POOL)
        self._synthesis_pool = DetailPool(DETAIL_POOL)
        self._stop_pool = DetailPool(STOP_REASON_POOL)
        self._seeded: set[str] = set()  # bounded: tenant labels are (max_tenants + 2)
        self._seeded_models: set[tuple[str, str]] = set()  # bounded by the synthesis pool
        self._seed_lock = threading.Lock()

    # --- tenants ----------------------------------------------------------------------------

    def seed_tenant(self, tenant: str) -> None:
        """Create the tenant's counter series at zero, once."""
        if tenant in self._seeded:
            return
        with self._seed_lock:
            if tenant in self._seeded:
                return
            self._seeded.add(tenant)
        instruments, add, attrs = self.instruments, self._add, self._attrs
        for outcome, empty in _SEEDED_RUNS:
            add(instruments.agent_runs, 0, attrs.runs(tenant, outcome, empty, False))
        for reason in sorted(TERMINATION_REASONS):
            add(instruments.silent_bails, 0, attrs.bail(tenant, reason))
        for stop in semconv.STOP_REASON_VALUES:
            add(instruments.stop_reasons, 0, attrs.stop(tenant, stop))
        for mode, action in _SEEDED_FABRICATION:
            fabrication = metric_attrs.fabrication(tenant, mode, action)
            add(instruments.fabrication_detections, 0, fabrication)

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
        self._add(
            instruments.agent_runs,
            1,
            self._cached(
                ("runs", tenant, outcome, empty, paused), attrs.runs, tenant, outcome, empty, paused
            ),
        )
        self._add(instruments.active_runs, -1, self.agent_attrs)
        if stop_reason is not None:
            stop = self._stop_label(tenant, stop_reason)
            self._add(
                instruments.stop_reasons,
                1,
                self._cached(("stop", tenant, stop), attrs.stop, tenant, stop),
            )
        if duration_s is None:
            return
        self._record(
            instruments.agent_duration,
            duration_s,
            self._cached(("duration", tenant, outcome), attrs.duration, tenant, outcome),
            link,
        )
        self._record(
            instruments.react_iterations,
            iterations,
            self._cached(("iterations", tenant), attrs.iterations, tenant),
        )

    def orphaned(self) -> None:
        self._add(self.instruments.orphaned_runs, 1, self.agent_attrs)

    def silent_bail(self, tenant: str, reason: str) -> None:
        self._add(
            self.instruments.silent_bails,
            1,
            self._cached(("bail", tenant, reason), self._attrs.bail, tenant, reason),
        )

    def fabrication(self, tenant: str, mode: str, action: str, confidence: float) -> None:
        if (mode, action) not in FABRICATION_PAIRS:
            mode = action = OTHER
        self._add(
            self.instruments.fabrication_detections,
            1,
            self._cached(
                ("fab", tenant, mode, action), metric_attrs.fabrication, tenant, mode, action
            ),
        )
        self._record(
            self.instruments.fabrication_confidence,
            confidence,
            self._cached(("fabconf", mode, action), metric_attrs.fabrication, None, mode, action),
        )

    def dropped(self, event_kind: str, reason: str) -> None:
        self._add(
            self.instruments.dropped_events,
            1,
            self._cached(("drop", event_kind, reason), metric_attrs.drop, event_kind, reason),
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

        Attribute sets are cached per *requested* label combination, so the budget is consulted
        once per combination: a pool's decision never changes (admitted keys stay admitted, and
        a pool that refused once is full for good). Histogram values carry ``link``, the call's
        span, as their exemplar.
        """
        instruments = self.instruments
        cache = self._cache
        op_attrs = cache.get(("op", tenant, operation, model, node, provider, error))
        if op_attrs is None:
            op_attrs = self._op_set(tenant, operation, model, node, provider, error)
        if duration_s is not None:
            self._record(instruments.operation_duration, duration_s, op_attrs, link)
        if ttfc_s is not None:  # its sets are those of a successful call (no error.type)
            ttfc_attrs = op_attrs
            if error is not None:
                ttfc_attrs = cache.get(("op", tenant, operation, model, node, provider, None)) or (
                    self._op_set(tenant, operation, model, node, provider, None)
                )
            self._record(instruments.time_to_first_chunk, ttfc_s, ttfc_attrs, link)
        for token_type, count in zip(
            (semconv.TOKEN_TYPE_INPUT, semconv.TOKEN_TYPE_OUTPUT), tokens, strict=True
        ):
            if count is not None:
                self._record(
                    instruments.token_usage,
                    count,
                    self._cached(
                        ("tokens", tenant, operation, model, node, provider, error, token_type),
                        metric_attrs.tokens,
                        op_attrs,
                        token_type,
                    ),
                    link,
                )
        cost_attrs = cache.get(("cost", tenant, model, node, pricing_unknown))
        if cost_attrs is None:
            cost_key: tuple[Any, ...] = (tenant, model, node, pricing_unknown)
            if not self._cost_pool.admit(cost_key):
                cost_key = (tenant, OTHER, OTHER, pricing_unknown)
            cost_attrs = self._remember(
                ("cost", tenant, model, node, pricing_unknown), metric_attrs.cost(*cost_key)
            )
        self._add(instruments.llm_cost, cost or 0.0, cost_attrs)
        if recovered is not None:
            synthesis_attrs = cache.get(("synthesis", tenant, model, recovered))
            if synthesis_attrs is None:
                synthesis_key: tuple[Any, ...] = (tenant, model, recovered)
                if not self._synthesis_pool.admit(synthesis_key):
                    synthesis_key = (tenant, OTHER, recovered)
                synthesis_attrs = self._remember(
                    ("synthesis", tenant, model, recovered), metric_attrs.synthesis(*synthesis_key)
                )
            self._add(instruments.synthesis_fallbacks, 1, synthesis_attrs)

    def tool_call(
        self,
        tenant: str,
        tool: str,
        error: str | None,
        duration_s: float,
        link: SpanLink | None,
    ) -> None:
        """``gen_ai.execute_tool.duration``; ``tool`` and ``error`` are raw (bounded here)."""
        attrs = self._cache.get(("tool", tenant, tool, error))
        if attrs is None:
            label = self.tools(tool) if tool else OTHER
            error_label = self.errors(error) if error is not None else None
            key: tuple[Any, ...] = (tenant, label, error_label)
            if not self._tool_pool.admit(key):
                key = (tenant, OTHER, OTHER if error is not None else None)
            attrs = self._remember(("tool", tenant, tool, error), self._attrs.tool(*key))
        self._record(self.instruments.tool_duration, duration_s, attrs, link)

    def _op_set(
        self,
        tenant: str,
        operation: str,
        model: str,
        node: str,
        provider: str | None,
        error: str | None,
    ) -> dict[str, Any]:
        """First call of a label combination: admit it (or fold it), seed its synthesis series."""
        self._seed_synthesis(tenant, model)
        key: tuple[Any, ...] = (tenant, operation, model, node, provider, error)
        if not self._op_pool.admit(key):
            key = (tenant, operation, OTHER, OTHER, OTHER, OTHER if error is not None else None)
        return self._remember(
            ("op", tenant, operation, model, node, provider, error), metric_attrs.operation(*key)
        )

    def _remember(self, key: tuple[object, ...], attrs: dict[str, Any]) -> dict[str, Any]:
        if len(self._cache) >= _ATTRS_CACHE_CAP:
            self._cache.clear()
        self._cache[key] = attrs
        return attrs

    def _seed_synthesis(self, tenant: str, model: str) -> None:
        """Synthesis series of a (tenant, model) at zero at its first call, before any fallback."""
        pair = (tenant, model)
        if pair in self._seeded_models:
            return
        with self._seed_lock:
            if pair in self._seeded_models:
                return
            admitted = [
                recovered
                for recovered in (True, False)
                if self._synthesis_pool.admit((tenant, model, recovered))
            ]
            if len(admitted) < 2:  # the pool is spent: fallbacks fold into the coarse series
                return
            self._seeded_models.add(pair)
        for recovered in admitted:
            self._add(
                self.instruments.synthesis_fallbacks,
                0,
                metric_attrs.synthesis(tenant, model, recovered),
            )

    # --- labels and attribute sets ----------------------------------------------------------

    def _stop_label(self, tenant: str, raw: str) -> str:
        if raw in _KNOWN_STOP_REASONS:
            return raw
        value = self._stop_values(raw)
        if value != OTHER and not self._stop_pool.admit((tenant, value)):
            return OTHER
        return value

    def _cached(
        self, key: tuple[object, ...], build: Callable[..., dict[str, Any]], *args: Any
    ) -> dict[str, Any]:
        """Attribute dicts are built once per label combination and reused on the hot path."""
        attrs = self._cache.get(key)
        if attrs is None:
            if len(self._cache) >= _ATTRS_CACHE_CAP:
                self._cache.clear()
            attrs = build(*args)
            self._cache[key] = attrs
        return attrs
