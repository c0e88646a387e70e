"""Tenant slots at the edges the admission tests leave alone: activity of a reserved label takes
no slot, a tenant evicted while its run was open takes its slot back on activity (even past the
cap), reserved labels always count as present, and the default idle time is the documented
3 days 6 hours."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.emit.tenants import DEFAULT_TENANT_IDLE_S, ActiveTenants
from tests.support.manual_clock import Clock


def test_activity_of_a_reserved_label_takes_no_slot() -> None:
    tenants = ActiveTenants(max_tenants=1, idle_s=10.0, clock=Clock(0.0))
    tenants.touch(semconv.TENANT_UNKNOWN)
    tenants.touch(semconv.OVERFLOW_VALUE)
    assert len(tenants) == 0
    assert tenants("acme") == "acme"  # the one slot is still free
    assert tenants.expire(100.0) == ["acme"]  # reserved labels are never evicted


def test_a_tenant_evicted_mid_run_takes_its_slot_back_on_activity_even_past_the_cap() -> None:
    clock = Clock(0.0)
    tenants = ActiveTenants(max_tenants=1, idle_s=10.0, clock=clock)
    tenants("a")
    clock.now = 11.0
    assert tenants("b") == "b"  # a was due: its slot went to b
    assert "a" not in tenants
    tenants.touch("a")  # a's run, still open, counts something
    assert "a" in tenants
    assert len(tenants) == 2
    clock.now = 30.0
    assert tenants.expire() == ["b", "a"]  # the next expiry frees it again, oldest first


def test_touch_stamps_activity_with_the_clock() -> None:
    clock = Clock(0.0)
    tenants = ActiveTenants(max_tenants=5, idle_s=10.0, clock=clock)
    tenants("a")
    clock.now = 7.0
    tenants.touch("a")
    assert tenants.expire(17.0) == []  # idle exactly 10 s since the touch
    assert tenants.expire(17.5) == ["a"]


def test_reserved_labels_are_always_present() -> None:
    tenants = ActiveTenants(max_tenants=1, always=("mine",))
    assert "mine" in tenants
    assert semconv.OVERFLOW_VALUE in tenants
    assert semconv.TENANT_UNKNOWN not in tenants  # replaced by the ``always`` given
    assert "acme" not in tenants
    assert len(tenants) == 0


def test_the_default_idle_time_is_three_days_and_six_hours() -> None:
    assert DEFAULT_TENANT_IDLE_S == 280_800.0
    assert ActiveTenants().idle_s == 280_800.0
    assert ActiveTenants(idle_s=90).idle_s == 90.0
