"""A per-tenant store under forced interleavings (``tests/support/paused_section.py``): the
first count of a new series and a count or an eviction on another thread at that moment.

The store's lock keeps a series' creation whole: a second count of the same set waits and adds
to the series the first made, and an eviction waits and then takes the new series with it (an
eviction that ran in between would leave a series no tenant holds, reported for ever).
"""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.emit.tenant_counters import TenantCounters
from symfonic_otel.emit.tenants import ActiveTenants
from tests.support.paused_section import PausedBefore

RUNS = semconv.AGENT_RUNS.name
ACME = {semconv.TENANT_ID: "acme"}


def test_two_first_counts_of_one_series_at_once_are_both_in_its_total() -> None:
    store = TenantCounters(ActiveTenants(), 10)
    with PausedBefore(TenantCounters.add, "current = self._new_series(") as first:
        first.start(store.add, RUNS, "acme", ACME, 1)
        store.add(RUNS, "acme", ACME, 2)
        first.finish()
    assert [(s.attributes, s.total) for s in store.snapshot(RUNS)] == [(ACME, 3)]


def test_a_tenant_evicted_as_its_first_series_is_made_leaves_no_series_behind() -> None:
    store = TenantCounters(ActiveTenants(), 10)
    with PausedBefore(TenantCounters._new_series, "held.keys.append((name, key))") as first:
        first.start(store.add, RUNS, "acme", ACME, 1)
        store.drop("acme")
        first.finish()
    assert store.series_count() == 0
    assert not store.knows("acme")
