"""Series budgets: how many attribute sets each instrument can hold, and the SDK limit they need.

The OpenTelemetry SDK keeps at most ``cardinality_limit`` attribute sets per instrument (2,000
unless configured) and folds every further set into one series labelled
``otel.metric.overflow=true``, which carries no tenant: a tenant whose series land there has no
silent-bail ratio and never pages. So the handler bounds its own attribute sets and the SDK limit
is set above that bound:

* every tenant (up to ``max_tenants``, plus ``unknown`` and ``__overflow__``) has a fixed number
  of *coarse* sets on each instrument: the product of that instrument's small closed label sets
  (outcome, termination reason, token type...), with open labels (model, node, provider, error
  type) read ``_OTHER``;
* *detailed* sets (a real model, node, provider or error type) come from a pool per instrument,
  first come, first served; once the pool is spent, a new detailed set folds into its tenant's
  coarse set, so the call is still counted for its tenant.

``series_budget(max_tenants)`` is the resulting worst case per instrument for one handler (one
agent name); ``configure_telemetry`` sets ``CARDINALITY_LIMIT`` on this package's meter, which
covers several default handlers. With a MeterProvider of your own, add ``cardinality_view()``.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Final

from symfonic_otel import semconv

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.view import View

# Detailed attribute sets per pooled instrument (shared by all tenants of a handler).
DETAIL_POOL: Final = 1_000
# Distinct pass-through stop reasons (beyond the known ones), and their (tenant, value) sets.
MAX_PASSTHROUGH_STOP_REASONS: Final = 16
STOP_REASON_POOL: Final = 500
MAX_ERROR_TYPES: Final = 64
# What ``configure_telemetry`` allows each instrument of this package's meter: five handlers at
# the default ``max_tenants`` fit, or one handler with about 10,000 tenants. The handler's own
# budgets are the real bound; this only has to sit above them.
CARDINALITY_LIMIT: Final = 100_000

# Coarse attribute sets per tenant, per instrument (the closed label sets multiplied out).
PER_TENANT: Final[Mapping[str, int]] = {
    # completed x {empty, not empty, unknown}, completed and paused, error, cancelled,
    # abandoned, _OTHER
    semconv.AGENT_RUNS.name: 8,
    semconv.AGENT_DURATION.name: 5,  # completed, error, cancelled, abandoned, _OTHER
    semconv.SILENT_BAILS.name: 3,  # the two termination reasons, _OTHER
    semconv.SYNTHESIS_FALLBACKS.name: 2,  # recovered true / false
    semconv.REACT_ITERATIONS.name: 1,
    # The model operations (chat, text_completion, embeddings) x (succeeded, failed)
    semconv.CLIENT_OPERATION_DURATION.name: 2 * len(semconv.MODEL_OPERATIONS),
    semconv.CLIENT_TOKEN_USAGE.name: 4 * len(semconv.MODEL_OPERATIONS),  # x (input, output)
    semconv.CLIENT_TIME_TO_FIRST_CHUNK.name: len(semconv.MODEL_OPERATIONS),
    semconv.EXECUTE_TOOL_DURATION.name: 2,  # succeeded, failed
    semconv.LLM_COST.name: 2,  # pricing known / unknown
    semconv.FABRICATION_DETECTIONS.name: 10,  # the 9 (mode, action) pairs, (_OTHER, _OTHER)
    semconv.STOP_REASONS.name: len(semconv.STOP_REASON_VALUES) + 1,  # + _OTHER
}
POOLED: Final[Mapping[str, int]] = {
    semconv.SYNTHESIS_FALLBACKS.name: DETAIL_POOL,
    semconv.CLIENT_OPERATION_DURATION.name: DETAIL_POOL,
    semconv.CLIENT_TOKEN_USAGE.name: 2 * DETAIL_POOL,  # the operation's sets x 2 token types
    # Time to first chunk shares the operation's pool: its sets are those of successful calls.
    semconv.CLIENT_TIME_TO_FIRST_CHUNK.name: DETAIL_POOL,
    semconv.EXECUTE_TOOL_DURATION.name: DETAIL_POOL,
    semconv.LLM_COST.name: DETAIL_POOL,
    semconv.STOP_REASONS.name: STOP_REASON_POOL,
}
# Instruments without a tenant label.
FIXED: Final[Mapping[str, int]] = {
    semconv.ACTIVE_RUNS.name: 1,
    semconv.ORPHANED_RUNS.name: 1,
    semconv.FABRICATION_CONFIDENCE.name: 10,
    semconv.DROPPED_EVENTS.name: 128,  # event kinds x drop reasons
    semconv.DROPPED_SPANS.name: 3,  # the three span drop reasons
}


def tenant_values(max_tenants: int) -> int:
    """Distinct tenant label values: the admitted ones plus ``unknown`` and ``__overflow__``."""
    return max_tenants + 2


def series_budget(max_tenants: int = 500) -> dict[str, int]:
    """Worst-case attribute sets per instrument for one handler with ``max_tenants``."""
    tenants = tenant_values(max_tenants)
    budget = {name: count * tenants + POOLED.get(name, 0) for name, count in PER_TENANT.items()}
    budget.update(FIXED)
    return budget


def required_cardinality_limit(max_tenants: int = 500, handlers: int = 1) -> int:
    """The SDK cardinality limit that ``handlers`` handlers on one MeterProvider need."""
    return max(series_budget(max_tenants).values()) * handlers


def cardinality_view(limit: int = CARDINALITY_LIMIT) -> View:
    """A View raising the SDK cardinality limit for this package's instruments only.

    ``MeterProvider(metric_readers=[...], views=[cardinality_view()])``.
    """
    from opentelemetry.sdk.metrics.view import View

    return View(meter_name=semconv.SCOPE_NAME, aggregation_cardinality_limit=limit)


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
