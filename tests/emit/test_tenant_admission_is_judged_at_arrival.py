"""A new tenant's slot is judged at the instant its run arrives: a tenant that only turns idle a
moment later still holds its slot, so the newcomer is counted as overflow."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.emit.tenants import ActiveTenants


def test_a_slot_freed_only_after_the_arrival_instant_is_not_given_away() -> None:
    readings = iter([0.0, 10.0, 10.5])  # acme arrives, globex arrives, then time moves on
    tenants = ActiveTenants(max_tenants=1, idle_s=10.0, clock=lambda: next(readings))
    assert tenants("acme") == "acme"
    assert tenants("globex") == semconv.OVERFLOW_VALUE
    assert "acme" in tenants
