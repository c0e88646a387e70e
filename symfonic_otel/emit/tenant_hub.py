"""One MeterProvider's per-tenant counters: every live handler's totals, handed to its readers.

Handlers that share a MeterProvider share its hub. At every collection the hub forgets idle
tenants and orphans past their idle time, then serves the live series to the reader: through
``reader_hook`` as OTel points (every reader of an SDK MeterProvider, the user's own included),
and to this package's Prometheus endpoint, which renders them itself. Only where that hook
cannot be installed (a MeterProvider that is not the SDK's, or an SDK whose internals moved) do
the totals go through observable counters as before, with the SDK's memory cost, logged once.

Handlers built before any global MeterProvider was set wait in the pending hub, which attaches
to the global provider at its first collection.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider

from symfonic_otel import semconv
from symfonic_otel._version import __version__
from symfonic_otel.emit import reader_hook
from symfonic_otel.emit.call_histograms import CallHistograms
from symfonic_otel.emit.recorder import recorder_for
from symfonic_otel.emit.tenant_counters import TENANT_COUNTERS, Series, TenantCounters
from symfonic_otel.logs import get_logger
from symfonic_otel.semconv import InstrumentSpec


class _Merged:
    """An attribute set summed over stores: its start, the parts it saw last, their carry."""

    __slots__ = ("carry", "parts", "start_ns")

    def __init__(self, start_ns: int) -> None:
        self.start_ns = start_ns
        self.carry = 0.0  # the last totals of parts that went (their store dropped the set)
        # The live parts by identity: a part object is one life of one store's series, held here
        # so that its identity is not reused while it is known.
        self.parts: dict[int, Series] = {}


class TenantHub:
    """The per-tenant counter stores reporting to one MeterProvider.

    Stores are held strongly: counts a handler recorded are still reported after the handler
    itself is garbage-collected, like its idle tenants, for one idle time.
    """

    def __init__(self) -> None:
        self.stores: list[TenantCounters] = []
        self._lock = threading.Lock()
        # Whether a provider's readers see this hub (a flag, not the provider: ``_hubs`` is keyed
        # weakly by the provider, which a reference from its own hub would keep alive forever).
        self.attached = False
        self.fallback = False  # reported through observable counters instead
        # Whether an exemplar may name a trace id (``export.trace_exemplars``); None: any.
        self.trace_filter: Callable[[int], bool] | None = None
        # The run's call histograms, where the reader hook produces them (else SDK instruments).
        self.call_histograms: CallHistograms | None = None
        # Once several stores reported here, every collection merges (``_merge``), even when one
        # is left: the carry of the others' counts must stay in the sums.
        self._merging = False  # pragma: no mutate: merging one store serves the same points
        self._merged: dict[str, dict[tuple[Any, ...], _Merged]] = {}
        self._merge_lock = threading.Lock()

    def add_store(self, store: TenantCounters) -> None:
        with self._lock:
            self.stores.append(store)

    def live_stores(self) -> list[TenantCounters]:
        """The stores still reported, after forgetting idle tenants and expired orphans."""
        with self._lock:
            if any(store.expired() for store in self.stores):
                self.stores = [store for store in self.stores if not store.expired()]
            stores = list(self.stores)
        for store in stores:
            store.tenants.expire()  # idle tenants leave before this collection reads them
        return stores

    def families(self) -> Iterator[tuple[InstrumentSpec, list[Series]]]:
        """Every per-tenant counter with its live series, read once per collection.

        One store's series are served as they are (their render cache survives); the series
        of several stores are summed per attribute set into fresh objects (``_merge``). One
        collection at a time reads the stores: two readers at once would merge out of order.
        """
        with self._merge_lock:
            stores = self.live_stores()
            self._merging = self._merging or len(stores) > 1  # pragma: no mutate: as above
            served: list[tuple[InstrumentSpec, list[Series]]] = []
            for spec in TENANT_COUNTERS:
                parts: dict[tuple[Any, ...], list[Series]] = {}
                for store in stores:
                    with store.lock:
                        held = list(store.series[spec.name].values())
                    if not self._merging:
                        served.append((spec, held))
                        break
                    for part in held:
                        parts.setdefault(part.key, []).append(part)
                else:
                    served.append((spec, self._merge(spec.name, parts)))
        yield from served

    def _merge(self, name: str, parts: dict[tuple[Any, ...], list[Series]]) -> list[Series]:
        """One series per attribute set, whose total never goes back while any store has it.

        A store's part can go while another store's part of the same set lives on (the tenant
        went idle in one handler only, or an orphaned handler expired): what it had counted is
        kept in the set's carry, so the sum stays monotonic under one start time. The carry goes
        with the set once no store holds it (a tenant back after that starts at zero).
        """
        merged = self._merged.setdefault(name, {})
        for key in merged.keys() - parts.keys():
            del merged[key]
        served: list[Series] = []
        for key, now in parts.items():
            state = merged.get(key)
            if state is None:
                state = merged[key] = _Merged(min(part.start_ns for part in now))
            live = {id(part): part for part in now}
            for gone in state.parts.keys() - live.keys():
                # Its store dropped it, so its total is final (no count reaches it any more).
                state.carry += state.parts.pop(gone).total
            state.parts = live
            found = Series(
                key, now[0].attributes, state.carry + sum(p.total for p in now), state.start_ns
            )
            for part in now:
                if part.exemplar is not None and (
                    found.exemplar is None
                    # Two exemplars of one instant are both the latest: either may be served.
                    or part.exemplar[3] > found.exemplar[3]  # pragma: no mutate: a tie, either
                ):
                    found.exemplar = part.exemplar
            served.append(found)
        return served

    def attach(self, provider: object, meter: Meter) -> None:
        """Serve this hub to ``provider``'s readers; observable counters where that fails."""
        with self._lock:
            if self.attached:
                return
            self.attached = True
        if isinstance(provider, SdkMeterProvider) and reader_hook.install(provider, self):
            return
        get_logger().warning(
            "symfonic_otel.tenant_counters_through_sdk_instruments",
            provider=type(provider).__name__,
            hint="the per-tenant counters are exported through observable counters, whose "
            "attribute sets the SDK keeps for the life of the process",
        )
        self.fallback = True  # pragma: no mutate: an inspection flag, never read
        for spec in TENANT_COUNTERS:
            meter.create_observable_counter(
                spec.name,
                callbacks=[self._observe(spec.name)],
                unit=spec.unit,
                description=spec.description,
            )

    def _observe(self, name: str) -> Any:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            for spec, series in self.families():
                if spec.name == name:
                    return [Observation(s.total, s.attributes) for s in series]
            return ()

        return observe


_hubs: weakref.WeakKeyDictionary[object, TenantHub] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


class _PendingHub(TenantHub):
    """Handlers built while no global MeterProvider was set: attached at its first collection.

    The recorder's collection hook on the global proxy meter runs once a provider is set and
    collects; it moves these stores to that provider's hub (counted from the next collection).
    """

    def __init__(self) -> None:
        super().__init__()
        self._hooked: weakref.WeakSet[object] = weakref.WeakSet()

    def wait_for_global(self, store: TenantCounters, meter: Meter) -> None:
        self.add_store(store)
        recorder = recorder_for(meter)
        with self._lock:
            if recorder in self._hooked:
                return
            self._hooked.add(recorder)
        recorder.on_collect(self.adopt)

    def adopt(self) -> None:
        provider = metrics.get_meter_provider()
        if not isinstance(provider, SdkMeterProvider):
            return
        with self._lock:
            stores, self.stores = self.stores, []
        if stores:
            hub = hub_for(provider)
            for store in stores:
                hub.add_store(store)


_pending = _PendingHub()


def hub_for(provider: MeterProvider | SdkMeterProvider) -> TenantHub:
    """The hub of ``provider``, made and attached on first use."""
    with _lock:
        hub = _hubs.get(provider)
        if hub is None:
            hub = _hubs[provider] = TenantHub()
    if not hub.attached:
        hub.attach(provider, provider.get_meter(semconv.SCOPE_NAME, __version__))
    return hub


def adopt_pending() -> None:
    """Hand the waiting handlers to the global provider now (``configure_telemetry`` just set
    it), so its first collection already carries their counters."""
    _pending.adopt()


def register(store: TenantCounters, meter: Meter, provider: MeterProvider | None) -> TenantHub:
    """Report ``store``'s totals to every reader of ``provider`` (the global one if None);
    the hub they go to (the pending one while no global provider is set)."""
    target = provider if provider is not None else metrics.get_meter_provider()
    if isinstance(target, SdkMeterProvider) or provider is not None:
        hub = hub_for(target)
        hub.add_store(store)
        return hub
    _pending.wait_for_global(store, meter)
    return _pending
