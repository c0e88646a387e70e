"""The per-tenant store's smaller promises: sums over handlers keep every part that went (however
many times), the latest exemplar of any handler rides on the sum, and what the store reports of
itself (its series, their count) is what it holds."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from symfonic_otel import semconv
from symfonic_otel.emit.tenant_counters import TenantCounters
from symfonic_otel.emit.tenant_hub import hub_for
from symfonic_otel.emit.tenants import ActiveTenants
from tests.support.manual_clock import Clock

RUNS = semconv.AGENT_RUNS.name
ACME = {semconv.TENANT_ID: "acme"}


def _runs(reader: InMemoryMetricReader) -> list[tuple[float, list[tuple[int, int]]]]:
    data = reader.get_metrics_data()
    return [
        (point.value, [(e.trace_id or 0, e.span_id or 0) for e in point.exemplars])
        for rm in (data.resource_metrics if data else ())
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if metric.name == RUNS
        for point in metric.data.data_points
    ]


@dataclass(frozen=True)
class _TwoHandlers:
    """The stores of two handlers on one provider; their tenants idle after 10 s of ``clock``."""

    reader: InMemoryMetricReader
    provider: MeterProvider
    clock: Clock
    stores: tuple[TenantCounters, TenantCounters]


@pytest.fixture
def two(sdk: tuple[InMemoryMetricReader, MeterProvider]) -> _TwoHandlers:
    reader, provider = sdk
    clock = Clock(now=0.0)
    first, second = (TenantCounters(ActiveTenants(idle_s=10, clock=clock), 10) for _ in range(2))
    for store in (first, second):
        hub_for(provider).add_store(store)
    return _TwoHandlers(reader, provider, clock, (first, second))


def test_a_tenant_leaving_one_handler_twice_keeps_both_lives_in_the_sum(two: _TwoHandlers) -> None:
    reader, clock = two.reader, two.clock
    steady, coming_and_going = two.stores
    steady.add(RUNS, "acme", ACME, 1)
    for value in (2, 3):  # two lives in the second handler, each seen, then gone
        coming_and_going.add(RUNS, "acme", ACME, value)
        assert _runs(reader)
        clock.now += 6
        steady.add(RUNS, "acme", ACME, 1)  # acme stays active in the first handler
        clock.now += 6
        assert [value for value, _ in _runs(reader)]  # the second handler's acme left
        assert not coming_and_going.knows("acme") and steady.knows("acme")
    assert [value for value, _ in _runs(reader)] == [1 + 2 + 1 + 3 + 1]


def test_the_sum_over_handlers_carries_the_latest_exemplar_of_any() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    stores = [TenantCounters(ActiveTenants(), 10) for _ in range(3)]
    for store in stores:
        hub_for(provider).add_store(store)
    try:
        stores[0].add(RUNS, "acme", ACME, 1, link=(1, 1))
        stores[1].add(RUNS, "acme", ACME, 1)  # no exemplar: it takes none away
        stores[2].add(RUNS, "acme", ACME, 1, link=(3, 3))
        assert _runs(reader) == [(3, [(3, 3)])]
        stores[0].add(RUNS, "acme", ACME, 1, link=(4, 4))  # now the latest
        assert _runs(reader) == [(4, [(4, 4)])]
    finally:
        provider.shutdown()


def test_what_the_store_reports_of_itself_is_what_it_holds() -> None:
    store = TenantCounters(ActiveTenants(), 10)
    store.add(RUNS, "acme", ACME, 2)
    store.add(RUNS, "globex", {semconv.TENANT_ID: "globex"}, 1)
    store.add(semconv.SILENT_BAILS.name, "acme", ACME, 1)
    (copy, _) = sorted(store.snapshot(RUNS), key=lambda s: -s.total)
    (held,) = [s for s in store.series[RUNS].values() if s.total == 2]
    assert (copy.key, dict(copy.attributes), copy.total, copy.start_ns) == (
        held.key,
        ACME,
        2,
        held.start_ns,
    )
    assert (store.series_count(RUNS), store.series_count(), store.tenant_count()) == (2, 3, 2)
    store.drop("never-seen")  # a tenant this store holds nothing of: nothing happens
    store.drop("acme")
    assert (store.series_count(RUNS), store.series_count()) == (1, 1)


def test_an_expired_orphan_goes_and_the_live_handlers_stay(two: _TwoHandlers) -> None:
    live, orphan = two.stores
    live.add(RUNS, "acme", ACME, 1)
    orphan.add(RUNS, "globex", {semconv.TENANT_ID: "globex"}, 5)
    orphan.orphan()  # its handler was collected: reported for one idle time more
    two.clock.now = 5
    live.add(RUNS, "acme", ACME, 1)
    assert sorted(value for value, _ in _runs(two.reader)) == [2, 5]
    two.clock.now = 11  # the orphan's idle time has passed; acme's has not
    assert [value for value, _ in _runs(two.reader)] == [2]
    assert hub_for(two.provider).stores == [live]
