"""The demo's levers as values: the tenant count's edges and the two faults drawn apart."""

from __future__ import annotations

import random

import pytest

from symfonic_otel.demo.levers import (
    DEFAULT_NOISY,
    LOST_RUN_EVERY,
    MAX_TENANTS,
    RETRIED_END_EVERY,
    Faults,
    tenant_names,
)


def test_a_count_of_one_tenant_is_the_noisy_one() -> None:
    assert tenant_names(1) == list(DEFAULT_NOISY) == ["globex"]
    assert tenant_names(2) == ["acme", "globex"]


def test_the_largest_tenant_count_is_accepted_and_one_more_refused() -> None:
    assert len(tenant_names(MAX_TENANTS)) == MAX_TENANTS
    with pytest.raises(ValueError, match="--tenants"):
        tenant_names(MAX_TENANTS + 1)


def test_with_faults_on_lost_workers_and_retried_ends_are_drawn_apart() -> None:
    rng = random.Random(7)
    draws = [Faults(enabled=True).draw(rng) for _ in range(20 * LOST_RUN_EVERY)]
    lost = sum(1 for lost, _ in draws if lost)
    retried = sum(1 for _, retried in draws if retried)
    assert lost > 0 and retried > 0
    assert retried > lost  # one in RETRIED_END_EVERY against one in LOST_RUN_EVERY
    assert RETRIED_END_EVERY < LOST_RUN_EVERY
    assert [lost for lost, _ in draws] != [retried for _, retried in draws]


def test_with_faults_off_nothing_is_drawn_but_the_draws_are_made() -> None:
    on, off = random.Random(3), random.Random(3)
    assert all(Faults().draw(off) == (False, False) for _ in range(200))
    for _ in range(200):
        Faults(enabled=True).draw(on)
    assert on.random() == off.random()  # the same seed plans the same runs either way
