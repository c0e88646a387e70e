"""Series budgets: how many attribute sets each instrument can hold, and the SDK limit they need.

The OpenTelemetry SDK keeps at most ``cardinality_limit`` attribute sets per instrument (2,000
unless configured) and folds every further set into one series labelled
``otel.metric.overflow=true``, which carries no tenant: a tenant whose series land there has no
silent-bail ratio and never pages. So the handler bounds its own attribute sets and the SDK limit
is set above that bound:

* only the per-tenant counters carry ``tenant.id``. Every active tenant (up to ``max_tenants``,
  plus ``unknown`` and ``__overflow__``) has a fixed number of *coarse* sets on each: the
  product of its small closed label sets (outcome, termination reason, token type...), with open
  labels (model, node, pass-through stop reason) read ``_OTHER``; and up to
  ``TENANT_DETAIL_SETS`` *detailed* sets (a real model or node) of its own, past which a new
  detailed set folds into its coarse set, so the count still lands on its tenant;
* histograms carry no tenant by default: coarse sets (operations x succeeded / failed...) plus
  a pool of detailed sets per instrument, first come, first served. With
  ``tenant_histograms=True`` each tenant gets the coarse sets and the pool is shared by all.

``series_budget(max_tenants)`` is the resulting worst case per instrument for one handler (one
agent name); ``configure_telemetry`` sets ``CARDINALITY_LIMIT`` on this package's meter. With a
MeterProvider of your own, add ``cardinality_view()``. An adapter or the span processor labels
runs with the framework's agent names (``emit.agents``): ``agent_names`` label values, at most
``agent_label_values()``, multiply the sets of the instruments carrying ``gen_ai.agent.name``.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Final

from symfonic_otel import semconv
from symfonic_otel.emit.vocabulary import MAX_AGENT_NAMES
from symfonic_otel.environment import warn_caller
from symfonic_otel.logs import get_logger

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.view import View

# Detailed histogram attribute sets per pooled instrument (shared by all tenants of a handler).
DETAIL_POOL: Final = 1_000
# Detailed sets (a real model, node or pass-through stop reason) per tenant and per-tenant
# counter; more fold into the tenant's ``_OTHER`` sets.
TENANT_DETAIL_SETS: Final = 16
# Distinct pass-through stop reasons (beyond the known ones).
MAX_PASSTHROUGH_STOP_REASONS: Final = 16
MAX_ERROR_TYPES: Final = 64
DEFAULT_MAX_TENANTS: Final = 10_000
# What ``configure_telemetry`` allows each instrument of this package's meter. The per-tenant
# counters are SDK instruments only where the reader hook is missing (``tenant_hub``); one
# handler at the default 10,000 active tenants then needs at most 250,050 sets on the largest,
# and the SDK also counts the sets of tenants that left, so the limit sits well above that.
# Histograms with ``tenant_histograms=True`` are held to it the same way.
CARDINALITY_LIMIT: Final = 2_000_000

# Coarse attribute sets per tenant, per per-tenant counter (the closed label sets multiplied out).
PER_TENANT: Final[Mapping[str, int]] = {
    # completed x {empty, not empty, unknown}, completed and paused, error, cancelled,
    # abandoned, _OTHER
    semconv.AGENT_RUNS.name: 8,
    semconv.SILENT_BAILS.name: 3,  # the two termination reasons, _OTHER
    semconv.SYNTHESIS_FALLBACKS.name: 2,  # recovered true / false, model _OTHER
    semconv.LLM_COST.name: 2,  # pricing known / unknown, model and node _OTHER
    semconv.LLM_TOKENS.name: 2,  # input / output, model _OTHER
    semconv.FABRICATION_DETECTIONS.name: 10,  # the 9 (mode, action) pairs, (_OTHER, _OTHER)
    semconv.STOP_REASONS.name: len(semconv.STOP_REASON_VALUES) + 1,  # + _OTHER
    # The two loop kinds, seeded at zero: the two lines loops add to every active tenant.
    semconv.LOOPING_RUNS.name: len(semconv.LOOP_KINDS),
    # One series, made at a tenant's first repeated tool call (never seeded).
    semconv.REPEATED_TOOL_CALLS.name: 1,
}
# Per-tenant counters whose tenants also hold up to TENANT_DETAIL_SETS detailed sets.
TENANT_DETAILED: Final = frozenset(
    {
        semconv.SYNTHESIS_FALLBACKS.name,
        semconv.LLM_COST.name,
        semconv.LLM_TOKENS.name,
        semconv.STOP_REASONS.name,
    }
)
# Histograms: coarse sets (per tenant with tenant_histograms=True) and their detail pools.
HISTOGRAM_COARSE: Final[Mapping[str, int]] = {
    semconv.AGENT_DURATION.name: 5,  # completed, error, cancelled, abandoned, _OTHER
    semconv.REACT_ITERATIONS.name: 1,
    # The model operations (chat, text_completion, embeddings) x (succeeded, failed)
    semconv.CLIENT_OPERATION_DURATION.name: 2 * len(semconv.MODEL_OPERATIONS),
    semconv.CLIENT_TOKEN_USAGE.name: 4 * len(semconv.MODEL_OPERATIONS),  # x (input, output)
    semconv.CLIENT_TIME_TO_FIRST_CHUNK.name: len(semconv.MODEL_OPERATIONS),
    semconv.EXECUTE_TOOL_DURATION.name: 2,  # succeeded, failed
    # Per run outcome: completed, error, cancelled, abandoned, _OTHER
    semconv.INVOKE_AGENT_INFERENCE_CALLS.name: 5,
    semconv.INVOKE_AGENT_TOOL_CALLS.name: 5,
}
POOLED: Final[Mapping[str, int]] = {
    semconv.CLIENT_OPERATION_DURATION.name: DETAIL_POOL,
    semconv.CLIENT_TOKEN_USAGE.name: 2 * DETAIL_POOL,  # the operation's sets x 2 token types
    # Time to first chunk shares the operation's pool: its sets are those of successful calls.
    semconv.CLIENT_TIME_TO_FIRST_CHUNK.name: DETAIL_POOL,
    semconv.EXECUTE_TOOL_DURATION.name: DETAIL_POOL,
}
# Instruments carrying ``gen_ai.agent.name``: their coarse sets (and the tool pool, whose keys
# hold no agent) repeat per agent label value.
AGENT_LABELLED: Final = frozenset(
    {
        semconv.AGENT_RUNS.name,
        semconv.SILENT_BAILS.name,
        semconv.STOP_REASONS.name,
        semconv.AGENT_DURATION.name,
        semconv.REACT_ITERATIONS.name,
        semconv.EXECUTE_TOOL_DURATION.name,
        semconv.ACTIVE_RUNS.name,
        semconv.ORPHANED_RUNS.name,
        semconv.LOOPING_RUNS.name,
        semconv.REPEATED_TOOL_CALLS.name,
        semconv.INVOKE_AGENT_INFERENCE_CALLS.name,
        semconv.INVOKE_AGENT_TOOL_CALLS.name,
    }
)
# Instruments without a tenant label, whatever the options.
FIXED: Final[Mapping[str, int]] = {
    semconv.ACTIVE_RUNS.name: 1,
    semconv.ORPHANED_RUNS.name: 1,
    semconv.FABRICATION_CONFIDENCE.name: 10,
    semconv.DROPPED_EVENTS.name: 128,  # event kinds x drop reasons
    semconv.DROPPED_SPANS.name: 3,  # the three span drop reasons
}


def tenant_values(max_tenants: int) -> int:
    """Distinct tenant label values at once: the active ones plus ``unknown``, ``__overflow__``."""
    return max_tenants + 2


def agent_label_values(max_agent_names: int = MAX_AGENT_NAMES) -> int:
    """Agent label values of one adapter or processor: its names, its default and ``_OTHER``."""
    return max_agent_names + 2


def per_tenant_sets(name: str, agent_names: int = 1) -> int:
    """Worst-case sets one tenant holds on the per-tenant counter ``name``."""
    coarse = PER_TENANT[name] * (agent_names if name in AGENT_LABELLED else 1)
    return coarse + (TENANT_DETAIL_SETS if name in TENANT_DETAILED else 0)


def series_budget(
    max_tenants: int = DEFAULT_MAX_TENANTS, tenant_histograms: bool = False, agent_names: int = 1
) -> dict[str, int]:
    """Worst-case attribute sets per instrument for one handler with ``max_tenants`` (and
    ``agent_names`` agent label values)."""
    tenants = tenant_values(max_tenants)
    budget = {name: per_tenant_sets(name, agent_names) * tenants for name in PER_TENANT}
    scale = tenants if tenant_histograms else 1
    for name, coarse in HISTOGRAM_COARSE.items():
        budget[name] = coarse * scale + POOLED.get(name, 0)
    budget.update(FIXED)
    for name in AGENT_LABELLED - PER_TENANT.keys():
        budget[name] *= agent_names
    return budget


def required_cardinality_limit(
    max_tenants: int = DEFAULT_MAX_TENANTS,
    handlers: int = 1,
    tenant_histograms: bool = False,
    agent_names: int = 1,
) -> int:
    """The SDK cardinality limit that ``handlers`` handlers on one MeterProvider need."""
    budget = series_budget(max_tenants, tenant_histograms, agent_names)
    return max(budget.values()) * handlers


def cardinality_view(limit: int = CARDINALITY_LIMIT) -> View:
    """A View raising the SDK cardinality limit for this package's instruments only.

    ``MeterProvider(metric_readers=[...], views=[cardinality_view()])``.
    """
    from opentelemetry.sdk.metrics.view import View

    if not sdk_bounds_series():
        # SDKs before 1.45 have no cardinality limit at all: no overflow series to avoid.
        return View(meter_name=semconv.SCOPE_NAME)
    return View(meter_name=semconv.SCOPE_NAME, aggregation_cardinality_limit=limit)


def sdk_bounds_series() -> bool:
    """Whether the installed SDK bounds an instrument's attribute sets (1.45 and later).

    SDK 1.45 brought the cardinality limit and the reset of delta storage after each
    collection. Before it, an attribute set an instrument was given is kept for the life of the
    process. The package's own sets are bounded either way (its label budgets, its per-tenant
    store) except the opt-in per-tenant histograms, whose tenants come and go.
    """
    import inspect

    from opentelemetry.sdk.metrics.view import View

    return "aggregation_cardinality_limit" in inspect.signature(View).parameters


def histograms_per_tenant(requested: bool) -> bool:
    """``tenant_histograms``, or False with one warning on an SDK that cannot bound them."""
    if not requested or sdk_bounds_series():
        return requested
    from opentelemetry.sdk.version import __version__ as sdk_version

    message = (
        f"tenant_histograms=True needs opentelemetry-sdk 1.45 or later (installed: {sdk_version}): "
        "before it the SDK keeps every tenant's histogram series for the life of the process, "
        "so memory grows with every tenant ever seen; the histograms carry no tenant "
        "(tenant_histograms=False). The per-tenant counters are unaffected."
    )
    get_logger().warning(
        "symfonic_otel.tenant_histograms_off", sdk_version=sdk_version, needs="1.45"
    )
    warn_caller(RuntimeWarning(message))
    return False


class DetailPool:
    """Detailed attribute sets admitted first come, first served, up to ``size``.

    Admitted keys stay admitted (a series, once created, keeps its name); past the size a new
    key is refused and its caller folds it into the tenant's coarse set.
    """

    __slots__ = ("_admitted", "_lock", "_size")

    def __init__(self, size: int) -> None:
        self._size = size
        self._admitted: set[Hashable] = set()
        self._lock = threading.Lock()

    def admit(self, key: Hashable) -> bool:
        if key in self._admitted:
            return True
        with self._lock:
            if key in self._admitted:
                return True
            if len(self._admitted) >= self._size:
                return False
            self._admitted.add(key)
            return True

    def __len__(self) -> int:
        return len(self._admitted)
