"""Handlers built before a global MeterProvider: handed to its hub once, however many
collections follow.

The pending hub hooks every collection of the global proxy meter and moves its waiting stores
to the provider's hub there. Moved once, a store's counts are reported once; moved again at each
collection, every count would be summed once per collection so far. The live test runs this
through a real process (the global provider can be set once per process); here the hub's own
step runs with the provider it would find.
"""

from __future__ import annotations

import pytest
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from symfonic_otel import semconv
from symfonic_otel._version import __version__
from symfonic_otel.emit import tenant_hub
from symfonic_otel.emit.tenant_counters import TenantCounters
from symfonic_otel.emit.tenants import ActiveTenants


def _runs(reader: InMemoryMetricReader) -> dict[str, float]:
    data = reader.get_metrics_data()
    found: dict[str, float] = {}
    for resource_metrics in data.resource_metrics if data else ():
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name == semconv.AGENT_RUNS.name:
                    for point in metric.data.data_points:
                        tenant = str(dict(point.attributes or {})[semconv.TENANT_ID])
                        found[tenant] = found.get(tenant, 0) + point.value
    return found


def test_a_waiting_store_is_moved_once_and_counted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    monkeypatch.setattr(metrics, "get_meter_provider", lambda: provider)  # as if set globally
    try:
        pending = tenant_hub._PendingHub()
        store = TenantCounters(ActiveTenants(10, 60.0), detail_cap=4)
        pending.add_store(store)
        attributes = {semconv.TENANT_ID: "acme", semconv.GEN_AI_AGENT_NAME: "app"}
        store.add(semconv.AGENT_RUNS.name, "acme", attributes, 2)
        for _ in range(3):  # the hook runs at every collection of the global meter
            pending.adopt()
            assert _runs(reader) == {"acme": 2}
        assert pending.stores == []
        assert tenant_hub.hub_for(provider).stores == [store]
    finally:
        provider.shutdown()


def test_waiting_stores_are_reported_from_the_global_providers_first_collection_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two handlers waiting on one meter: its collection hook hands both stores over."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    monkeypatch.setattr(metrics, "get_meter_provider", lambda: provider)  # as if set globally
    try:
        pending = tenant_hub._PendingHub()
        meter = provider.get_meter(semconv.SCOPE_NAME, __version__)
        stores = [TenantCounters(ActiveTenants(10, 60.0), detail_cap=4) for _ in range(2)]
        attributes = {semconv.TENANT_ID: "acme", semconv.GEN_AI_AGENT_NAME: "app"}
        for value, store in enumerate(stores, start=2):
            pending.wait_for_global(store, meter)
            store.add(semconv.AGENT_RUNS.name, "acme", attributes, value)
        assert pending.stores == stores
        reader.get_metrics_data()  # the first collection runs the hook: the stores move
        assert pending.stores == []
        assert tenant_hub.hub_for(provider).stores == stores
        for _ in range(2):
            assert _runs(reader) == {"acme": 5}
    finally:
        provider.shutdown()
