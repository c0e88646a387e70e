"""Per-tenant counter totals, kept by this package and forgotten tenant by tenant.

The OpenTelemetry Python SDK keeps an aggregation for every attribute set an instrument was
ever given, and no public API releases one: a tenant that left would cost memory, collection
time and cardinality for the life of the process. So the counters that carry ``tenant.id`` are
not SDK instruments at all. Their totals live here, per handler and per tenant; when
``ActiveTenants`` frees a tenant's slot its series are dropped, every byte with them, and a
tenant that returns starts new series at zero (a counter reset to Prometheus' ``increase()``).
``tenant_hub`` hands the totals to every reader of the MeterProvider, as the specification's
metric producer would.

Each tenant may hold ``detail_cap`` detailed attribute sets per instrument (a real model, node
or pass-through stop reason); past that, a new detailed set is folded into the tenant's coarse
set, so every count still lands on its tenant and a tenant's series stay bounded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any, Final

from symfonic_otel import semconv
from symfonic_otel.emit.tenants import ActiveTenants

# The counters that carry ``tenant.id`` (the silent-bail page and the per-tenant panels).
TENANT_COUNTERS: Final = (
    semconv.AGENT_RUNS,
    semconv.SILENT_BAILS,
    semconv.SYNTHESIS_FALLBACKS,
    semconv.STOP_REASONS,
    semconv.LLM_COST,
    semconv.LLM_TOKENS,
    semconv.FABRICATION_DETECTIONS,
    semconv.LOOPING_RUNS,
    semconv.REPEATED_TOOL_CALLS,
)
TENANT_COUNTER_NAMES: Final = frozenset(spec.name for spec in TENANT_COUNTERS)

# A series' values then its keys, in the builder's order: the same set always gives the same
# key, and a tuple of existing objects is a fraction of the size of a frozenset of items.
SeriesKey = tuple[Any, ...]
# The latest count of a series that came with a sampled span: (trace id, span id, value, ns).
Exemplar = tuple[int, int, float, int]
SpanLink = tuple[int, int]


class Series:
    """One attribute set's running total since ``start_ns``, and what renders it.

    ``line`` caches the series' exposition line for the total it was rendered at
    (``line_total``), so a scrape formats only the series whose counts changed.
    """

    __slots__ = ("attributes", "exemplar", "key", "line", "line_total", "start_ns", "total")

    def __init__(
        self, key: SeriesKey, attributes: Mapping[str, Any], total: float, start_ns: int
    ) -> None:
        self.key = key
        self.attributes = attributes
        self.total = total
        self.start_ns = start_ns
        self.exemplar: Exemplar | None = None
        self.line: str | None = None
        self.line_total: float = 0


class _Tenant:
    """What one tenant holds: its series keys and how many detailed sets per instrument."""

    __slots__ = ("details", "keys")

    def __init__(self) -> None:
        self.keys: list[tuple[str, SeriesKey]] = []
        self.details: dict[str, int] = {}


class TenantCounters:
    """One handler's per-tenant counter totals, dropped tenant by tenant."""

    __slots__ = (
        "__weakref__",
        "_detail_cap",
        "_tenants",
        "lock",
        "orphaned_at",
        "series",
        "tenants",
    )

    def __init__(self, tenants: ActiveTenants, detail_cap: int) -> None:
        self.tenants = tenants
        # When the handler owning these totals was garbage-collected (clock seconds), if it was.
        self.orphaned_at: float | None = None
        self._detail_cap = detail_cap
        self.series: dict[str, dict[SeriesKey, Series]] = {n: {} for n in TENANT_COUNTER_NAMES}
        self._tenants: dict[str, _Tenant] = {}
        # Readers iterate ``series`` under this lock: a scrape never sees a set half-added.
        self.lock = threading.Lock()
        tenants.on_evict(self.drop)

    def add(
        self,
        name: str,
        tenant: str,
        attributes: Mapping[str, Any],
        value: float,
        fold: Mapping[str, Any] | None = None,
        link: SpanLink | None = None,
    ) -> None:
        """Add ``value`` to the tenant's series; ``fold`` is the coarse set of a detailed one.

        ``link``, a sampled span this count belongs to, becomes the series' exemplar.
        """
        self.tenants.touch(tenant)
        key: SeriesKey = (*attributes.values(), *attributes)
        series = self.series[name]
        with self.lock:
            current = series.get(key)
            if current is None:
                current = self._new_series(name, tenant, key, attributes, value, fold)
            else:
                current.total += value
            if link is not None:
                current.exemplar = (link[0], link[1], value, time.time_ns())

    def _new_series(
        self,
        name: str,
        tenant: str,
        key: SeriesKey,
        attributes: Mapping[str, Any],
        value: float,
        fold: Mapping[str, Any] | None,
    ) -> Series:
        series = self.series[name]
        held = self._tenants.get(tenant)
        if held is None:
            held = self._tenants[tenant] = _Tenant()
        if fold is not None:
            if held.details.get(name, 0) >= self._detail_cap:
                key = (*fold.values(), *fold)
                current = series.get(key)
                if current is not None:
                    current.total += value
                    return current
                attributes = fold
            else:
                held.details[name] = held.details.get(name, 0) + 1
        created = series[key] = Series(key, attributes, value, time.time_ns())
        held.keys.append((name, key))
        return created

    def knows(self, tenant: str) -> bool:
        """Whether the tenant holds series here (it was seen since it last gave its slot back)."""
        return tenant in self._tenants

    def drop(self, tenant: str) -> None:
        """Forget the tenant's totals: its series are no longer reported."""
        with self.lock:
            held = self._tenants.pop(tenant, None)
            if held is None:
                return
            for name, key in held.keys:
                self.series[name].pop(key, None)  # pragma: no mutate: a tenant's keys are unique

    def snapshot(self, name: str) -> list[Series]:
        """Copies of the live series of ``name`` (tests, the report): safe to keep."""
        with self.lock:
            return [
                Series(s.key, s.attributes, s.total, s.start_ns) for s in self.series[name].values()
            ]

    def series_count(self, name: str | None = None) -> int:
        with self.lock:
            if name is not None:
                return len(self.series[name])
            return sum(len(series) for series in self.series.values())

    def tenant_count(self) -> int:
        return len(self._tenants)

    def orphan(self) -> None:
        """Its handler is gone: keep reporting what it counted, for one idle time more."""
        self.orphaned_at = self.tenants.clock()

    def expired(self) -> bool:
        """An orphan whose idle time has passed: nothing of it needs reporting any more."""
        orphaned_at = self.orphaned_at
        return orphaned_at is not None and self.tenants.clock() - orphaned_at > self.tenants.idle_s
