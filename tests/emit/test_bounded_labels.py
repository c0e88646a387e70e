"""A bounded label: the first ``cap`` distinct values keep their name, the rest fold into one
overflow value, reserved values pass without a slot, and its memo never changes an answer nor
grows without bound."""

from __future__ import annotations

from symfonic_otel.emit.labels import BoundedLabels
from symfonic_otel.emit.vocabulary import OTHER, label_or_other


def _labels(cap: int, always: tuple[str, ...] = ()) -> BoundedLabels:
    return BoundedLabels(cap, OTHER, label_or_other, always=always)


def test_exactly_cap_values_are_admitted_and_the_next_one_overflows() -> None:
    labels = _labels(2)
    assert [labels("a"), labels("b"), labels("c")] == ["a", "b", OTHER]
    assert len(labels) == 2


def test_an_admitted_value_keeps_its_name_after_the_cap_is_reached() -> None:
    labels = _labels(2)
    labels(" a ")
    labels("b")
    labels("c")
    assert labels("a") == "a"  # same normalised value, another raw input: still admitted
    assert labels(" a ") == "a"
    assert labels("c") == OTHER  # a refused value stays refused


def test_reserved_values_and_the_overflow_value_take_no_slot() -> None:
    labels = _labels(1, always=("mine",))
    assert labels("mine") == "mine"
    assert labels(OTHER) == OTHER
    assert len(labels) == 0
    assert labels("first") == "first"
    assert labels("mine") == "mine"  # never capped, even with every slot taken


def test_a_blank_value_is_the_other_label_and_takes_no_slot() -> None:
    labels = _labels(1)
    assert labels("   ") == OTHER
    assert labels("real") == "real"


def test_equal_keys_of_other_types_are_not_answered_from_the_memo() -> None:
    """``1 == True == 1.0`` as dict keys: only strings are memoised, so each keeps its label."""
    labels = _labels(10)
    assert labels(1) == "1"
    assert labels(True) == "True"
    assert labels(1.0) == "1.0"


def test_an_unhashable_value_is_labelled_like_any_other() -> None:
    labels = _labels(10)
    assert labels(["a"]) == "['a']"
    assert labels(["a"]) == "['a']"
    assert len(labels) == 1


def test_the_memo_keeps_no_long_input_and_stays_bounded() -> None:
    labels = _labels(4)
    long_raw = "x" * 257
    labels(long_raw)
    at_limit = "y" * 256
    labels(at_limit)
    for i in range(1000):
        labels(f"v{i}")
    memo = labels._memo  # the bound is the promise under test
    assert long_raw not in memo
    assert at_limit in memo
    assert len(memo) == 64  # at least 64 entries, however small the cap


def test_the_memo_of_a_large_cap_holds_twice_the_cap() -> None:
    labels = _labels(40)
    for i in range(1000):
        labels(f"v{i}")
    assert len(labels._memo) == 80  # the bound is the promise under test
