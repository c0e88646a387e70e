"""Two new tenants arriving at once for the last slot: one takes it, the other is counted as
``__overflow__``. The check against the cap and the taking of the slot happen under one lock.

The interleaving is forced (``tests/support/paused_section.py``): the first tenant is paused
after it found a slot free and before it takes it; the second arrives then.
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
