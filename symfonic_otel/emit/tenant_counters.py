"""Per-tenant counters that forget a tenant: observable counters fed from our own totals.

The OpenTelemetry SDK never forgets an attribute set of a synchronous instrument under
cumulative temporality: a tenant that left would be exported for the life of the process. An
asynchronous instrument's series ends when its callback stops reporting it (the Prometheus
endpoint and cumulative OTLP both stop serving it at the next collection). So the counters that
carry ``tenant.id`` are observable counters whose callbacks report the running totals kept here,
per handler and per tenant; when ``ActiveTenants`` frees a tenant's slot, its totals are
dropped and its series vanish. A tenant that returns starts again at zero, which Prometheus'
``increase()`` reads as a counter reset.

Each tenant may hold ``detail_cap`` detailed attribute sets per instrument (a real model, node
or pass-through stop reason); past that, a new detailed set is folded into the tenant's coarse
set, so every count still lands on its tenant and a tenant's series stay bounded.

Handlers that share a MeterProvider share its observable instruments (the SDK registers a name
once per meter and ignores a second registration's callbacks): one hub per provider reports the
totals of every live handler on it, summing sets two handlers both count.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import Any, Final

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation

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
)
TENANT_COUNTER_NAMES: Final = frozenset(spec.name for spec in TENANT_COUNTERS)

# A series' values then its keys, in the builder's order: the same set always gives the same
# key, and a tuple of existing objects is a fraction of the size of a frozenset of items.
SeriesKey = tuple[Any, ...]


class _Series:
    __slots__ = ("attributes", "total")

    def __init__(self, attributes: Mapping[str, Any], total: float) -> None:
        self.attributes = attributes
        self.total = total


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
        "_lock",
        "_series",
        "_tenants",
        "orphaned_at",
        "tenants",
    )

    def __init__(self, tenants: ActiveTenants, detail_cap: int) -> None:
        self.tenants = tenants
        # When the handler owning these totals was garbage-collected (clock seconds), if it was.
        self.orphaned_at: float | None = None
        self._detail_cap = detail_cap
        self._series: dict[str, dict[SeriesKey, _Series]] = {n: {} for n in TENANT_COUNTER_NAMES}
        self._tenants: dict[str, _Tenant] = {}
        self._lock = threading.Lock()
        tenants.on_evict(self.drop)

    def add(
        self,
        name: str,
        tenant: str,
        attributes: Mapping[str, Any],
        value: float,
        fold: Mapping[str, Any] | None = None,
    ) -> None:
        """Add ``value`` to the tenant's series; ``fold`` is the coarse set of a detailed one."""
        self.tenants.touch(tenant)
        key: SeriesKey = (*attributes.values(), *attributes)
        series = self._series[name]
        with self._lock:
            current = series.get(key)
            if current is not None:
                current.total += value
                return
            held = self._tenants.get(tenant)
            if held is None:
                held = self._tenants[tenant] = _Tenant()
            if fold is not None:
                if held.details.get(name, 0) >= self._detail_cap:
                    attributes, fold = fold, None
                    key = (*attributes.values(), *attributes)
                    current = series.get(key)
                    if current is not None:
                        current.total += value
                        return
                else:
                    held.details[name] = held.details.get(name, 0) + 1
            series[key] = _Series(attributes, value)
            held.keys.append((name, key))

    def knows(self, tenant: str) -> bool:
        """Whether the tenant holds series here (it was seen since it last gave its slot back)."""
        return tenant in self._tenants

    def drop(self, tenant: str) -> None:
        """Forget the tenant's totals: its series are no longer reported."""
        with self._lock:
            held = self._tenants.pop(tenant, None)
            if held is None:
                return
            for name, key in held.keys:
                self._series[name].pop(key, None)

    def snapshot(self, name: str) -> list[_Series]:
        with self._lock:
            return [_Series(s.attributes, s.total) for s in self._series[name].values()]

    def series_count(self, name: str | None = None) -> int:
        with self._lock:
            if name is not None:
                return len(self._series[name])
            return sum(len(series) for series in self._series.values())

    def tenant_count(self) -> int:
        return len(self._tenants)

    def orphan(self) -> None:
        """Its handler is gone: keep reporting what it counted, for one idle time more."""
        self.orphaned_at = self.tenants.clock()

    def expired(self) -> bool:
        """An orphan whose idle time has passed: nothing of it needs reporting any more."""
        orphaned_at = self.orphaned_at
        return orphaned_at is not None and self.tenants.clock() - orphaned_at > self.tenants.idle_s


class _Hub:
    """The observable counters of one MeterProvider, reporting every handler's totals.

    Stores are held strongly: counts a handler recorded are still exported after the handler
    itself is garbage-collected, like its idle tenants, for one idle time.
    """

    def __init__(self, meter: Meter) -> None:
        self.stores: list[TenantCounters] = []
        self._lock = threading.Lock()
        for spec in TENANT_COUNTERS:
            meter.create_observable_counter(
                spec.name,
                callbacks=[self._callback(spec.name)],
                unit=spec.unit,
                description=spec.description,
            )

    def add_store(self, store: TenantCounters) -> None:
        with self._lock:
            self.stores.append(store)

    def _callback(self, name: str) -> Any:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            with self._lock:
                if any(store.expired() for store in self.stores):
                    self.stores = [store for store in self.stores if not store.expired()]
                stores = list(self.stores)
            for store in stores:
                store.tenants.expire()  # idle tenants leave before this collection reads them
            if len(stores) == 1:
                return [Observation(s.total, s.attributes) for s in stores[0].snapshot(name)]
            merged: dict[frozenset[tuple[str, Any]], _Series] = {}
            for store in stores:
                for s in store.snapshot(name):
                    key = frozenset(s.attributes.items())
                    if key in merged:
                        merged[key].total += s.total
                    else:
                        merged[key] = s
            return [Observation(s.total, s.attributes) for s in merged.values()]

        return observe


_hubs: weakref.WeakKeyDictionary[object, _Hub] = weakref.WeakKeyDictionary()
_global_hub: list[_Hub] = []
_lock = threading.Lock()


def register(store: TenantCounters, meter: Meter, provider: MeterProvider | None) -> None:
    """Report ``store``'s totals through the observable counters of ``provider``'s meter.

    Handlers built without a provider (the global one) share one hub, whenever the global
    provider is set; so does a handler given the provider that is global at that moment.
    """
    with _lock:
        if provider is None or provider is metrics.get_meter_provider():
            if not _global_hub:
                _global_hub.append(_Hub(meter))
            hub = _global_hub[0]
        else:
            found = _hubs.get(provider)
            if found is None:
                found = _hubs[provider] = _Hub(meter)
            hub = found
    hub.add_store(store)
