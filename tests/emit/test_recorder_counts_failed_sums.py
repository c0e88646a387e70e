"""A counter total the SDK refuses at drain is counted as a failure, and the drain goes on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from symfonic_otel.emit.recorder import DeferredRecorder


class _Refusing:
    def add(self, amount: float, attributes: Mapping[str, Any] | None = None) -> None:
        raise RuntimeError("refused")


class _Counter:
    def __init__(self) -> None:
        self.total = 0.0

    def add(self, amount: float, attributes: Mapping[str, Any] | None = None) -> None:
        self.total += amount


def test_each_refused_counter_sum_adds_one_failure() -> None:
    recorder = DeferredRecorder()
    good = _Counter()
    recorder.add(_Refusing(), 1.0, {})
    recorder.add(_Refusing(), 2.0, {})
    recorder.add(good, 3.0, {})
    assert recorder.drain() == 3
    assert recorder.failed == 2
    assert good.total == 3.0
