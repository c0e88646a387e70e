"""Tenant slots (``ActiveTenants``): the idle order follows the latest activity, whether a known
tenant is admitted again or touched; the cap and the idle time hold at exactly their value and
give way one past it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from symfonic_otel import semconv
from symfonic_otel.emit.tenants import ActiveTenants
from tests.support.manual_clock import Clock


def _tenants(max_tenants: int = 2, idle_s: float = 10.0) -> tuple[ActiveTenants, Clock]:
    clock = Clock(now=0.0)
    return ActiveTenants(max_tenants, idle_s, clock), clock


def _admit_again(tenants: ActiveTenants, name: str) -> None:
    assert tenants(name) == name  # a known tenant is admitted again, never refused


@pytest.mark.parametrize("seen", [_admit_again, ActiveTenants.touch], ids=["admitted", "touched"])
def test_a_tenant_seen_again_moves_behind_the_ones_seen_since(
    seen: Callable[[ActiveTenants, str], None],
) -> None:
    tenants, clock = _tenants()
    tenants("a")
    clock.now = 1.0
    tenants("b")
    clock.now = 8.0
    seen(tenants, "a")  # a is now the most recent
    assert tenants.expire(11.5) == ["b"]  # b idle 10.5 s; a idle 3.5 s stays
    assert "a" in tenants
    assert tenants.expire(18.5) == ["a"]


def test_a_full_registry_admits_exactly_max_tenants_and_refuses_the_next() -> None:
    tenants, _ = _tenants(max_tenants=3)
    assert [tenants(name) for name in ("a", "b", "c")] == ["a", "b", "c"]
    assert len(tenants) == 3
    assert tenants("d") == semconv.OVERFLOW_VALUE
    assert tenants("a") == "a"  # a known tenant is never refused
    assert len(tenants) == 3


def test_a_tenant_idle_exactly_idle_s_keeps_its_slot_and_one_past_gives_it_back() -> None:
    tenants, _ = _tenants(idle_s=10.0)
    tenants("a")
    assert tenants.expire(10.0) == []
    assert tenants.expire(10.001) == ["a"]
    assert "a" not in tenants


def test_a_due_slot_is_freed_for_a_new_tenant_at_the_cap() -> None:
    tenants, clock = _tenants(max_tenants=1, idle_s=10.0)
    tenants("a")
    clock.now = 10.0
    assert tenants("b") == semconv.OVERFLOW_VALUE  # a idle exactly 10 s: still holds it
    clock.now = 10.5
    assert tenants("b") == "b"
    assert "a" not in tenants


def test_reserved_labels_take_no_slot() -> None:
    tenants, _ = _tenants(max_tenants=1)
    assert tenants(None) == semconv.TENANT_UNKNOWN
    assert tenants("a") == "a"
    assert len(tenants) == 1
