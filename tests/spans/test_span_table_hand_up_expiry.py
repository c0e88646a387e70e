"""The open-span table ages out at every span, not only at a metric collection: handing a new
parent its first descendant evicts the parents held past the TTL first (and only those)."""

from __future__ import annotations

import time

from symfonic_otel.spans.traces import Pending, SpanTable


def test_a_new_parent_evicts_the_parents_held_past_the_ttl() -> None:
    table = SpanTable(max_open=10, ttl_s=60.0)
    stale = Pending(created=time.monotonic() - 120.0)
    fresh = Pending()
    assert table.hand_up((1, 1), stale) == []
    assert table.hand_up((1, 2), fresh) == [stale]
    assert len(table) == 1
    assert table.ended((1, 1)) and not table.ended((1, 2))


def test_a_descendant_of_a_held_parent_is_merged_without_eviction() -> None:
    table = SpanTable(max_open=10, ttl_s=60.0)
    stale = Pending(created=time.monotonic() - 120.0)
    assert table.hand_up((1, 1), stale) == []
    assert table.hand_up((1, 1), Pending()) == []  # the same parent: folded in, none aged out
    assert len(table) == 1
