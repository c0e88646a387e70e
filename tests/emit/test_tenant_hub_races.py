"""The per-tenant hubs under contention. Two collections of the stores merging at once (a flush
and a scrape): one merge at a time, so the total of a store's part that went is carried into the
sum once. Two handlers on a new provider at once: one hub for it, attached to its readers once.

Each interleaving is forced (``tests/support/paused_section.py``): the first call is paused in
its critical section (as it carries the part that went; as it makes the hub), and the second
runs then; with the lock it waits.
"""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from symfonic_otel import semconv
from symfonic_otel.emit import tenant_hub
from symfonic_otel.emit.tenant_counters import Series, TenantCounters
from symfonic_otel.emit.tenant_hub import TenantHub
from symfonic_otel.emit.tenants import ActiveTenants
from tests.support.manual_clock import Clock
from tests.support.paused_section import PausedBefore

RUNS = semconv.AGENT_RUNS.name
ACME = {semconv.TENANT_ID: "acme"}


def _runs(hub: TenantHub) -> list[float]:
    return [s.total for spec, series in hub.families() if spec.name == RUNS for s in series]


def _runs_of(served: list[tuple[object, list[Series]]]) -> list[float]:
    return [
        s.total for spec, series in served if getattr(spec, "name", None) == RUNS for s in series
    ]


def test_two_collections_merging_a_part_that_went_carry_its_total_once() -> None:
    clock = Clock(now=0.0)
    steady, leaving = (TenantCounters(ActiveTenants(idle_s=10, clock=clock), 10) for _ in range(2))
    hub = TenantHub()
    for store in (steady, leaving):
        hub.add_store(store)
    steady.add(RUNS, "acme", ACME, 1)
    leaving.add(RUNS, "acme", ACME, 2)
    assert _runs(hub) == [3]
    leaving.drop("acme")  # the tenant went idle in one handler only
    with PausedBefore(TenantHub._merge, "state.carry +=") as first:
        first.start(lambda: list(hub.families()))
        second = list(hub.families())
        served = first.finish()
    assert _runs_of(served) == [3]
    assert _runs_of(second) == [3]  # type: ignore[arg-type]
    assert _runs(hub) == [3]


def test_two_handlers_asking_for_a_new_providers_hub_at_once_share_it() -> None:
    """The hub of a provider is made once, under the hubs' lock: a store added to the hub the
    second handler got is reported with the first's."""
    provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    try:
        with PausedBefore(tenant_hub.hub_for, "_hubs[provider] = TenantHub()") as first:
            first.start(tenant_hub.hub_for, provider)
            second = tenant_hub.hub_for(provider)
            hub = first.finish()
        assert hub is second
        assert tenant_hub.hub_for(provider) is hub
    finally:
        provider.shutdown()


def test_a_hub_attached_twice_at_once_reports_each_series_once() -> None:
    """A hub is attached to its provider's readers once (the check and the flag under the hub's
    lock): two attachments at once do not serve its series twice in one collection."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    hub, store = TenantHub(), TenantCounters(ActiveTenants(), 10)
    hub.add_store(store)
    meter = provider.get_meter(semconv.SCOPE_NAME)
    try:
        with PausedBefore(TenantHub.attach, "self.attached = True") as first:
            first.start(hub.attach, provider, meter)
            hub.attach(provider, meter)
            first.finish()
        store.add(RUNS, "acme", ACME, 2)
        data = reader.get_metrics_data()
        points = [
            point.value  # type: ignore[union-attr]
            for resource in (data.resource_metrics if data else ())
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == RUNS
            for point in metric.data.data_points
        ]
        assert points == [2]
    finally:
        provider.shutdown()
