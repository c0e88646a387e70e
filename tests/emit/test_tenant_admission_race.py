"""A new run's tenant under contention. Two new tenants arriving at once for the last slot: one
takes it, the other is counted as ``__overflow__`` (the check against the cap and the taking of
the slot happen under one lock). A known tenant's run racing an expiry keeps its slot.

Each interleaving is forced (``tests/support/paused_section.py``): the first run is paused after
it found its slot (or a free one) and before it stamps it; the contender runs then.
"""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.emit.tenants import ActiveTenants
from tests.support.manual_clock import Clock
from tests.support.paused_section import PausedBefore


def test_two_new_tenants_arriving_at_once_for_the_last_slot_take_one_slot() -> None:
    tenants = ActiveTenants(max_tenants=1, idle_s=10, clock=Clock(now=0.0))
    # the second ``self._last[tenant] = now`` of a call: a new tenant taking its slot
    with PausedBefore(ActiveTenants.__call__, "self._last[tenant] = now", nth=2) as first:
        first.start(tenants, "acme")
        second = tenants("globex")
        assert first.finish() == "acme"
    assert second == semconv.OVERFLOW_VALUE
    assert len(tenants) == 1
    assert "acme" in tenants
    assert "globex" not in tenants


def test_a_returning_tenant_racing_an_expiry_keeps_its_slot_and_never_raises() -> None:
    """A known tenant's new run finds its slot and stamps it under the lock: an expiry on
    another thread in between waits, then finds the slot fresh (it does not evict a tenant
    whose run has just started, resetting its series)."""
    clock = Clock(now=0.0)
    tenants = ActiveTenants(max_tenants=2, idle_s=10, clock=clock)
    assert tenants("acme") == "acme"
    clock.now = 100.0  # long idle: an expiry would free the slot, but its run arrives first
    # the first ``self._last[tenant] = now`` of a call: a known tenant stamping its slot
    with PausedBefore(ActiveTenants.__call__, "self._last[tenant] = now") as run:
        run.start(tenants, "acme")
        expired = tenants.expire()
        assert run.finish() == "acme"
    assert expired == []
    assert "acme" in tenants
