"""The span table's expiry (run at a metric collection, on the collecting thread) against a
span's end, a hand-up, a drain at shutdown or a second expiry on another thread: each held
span's evidence leaves the table exactly once, and neither side raises.

The interleaving is forced, not hoped for: the held evidence's creation stamp is a ``float``
whose subtraction (the expiry's age check) pauses the expiring thread after it has picked the
oldest span and before it takes it out, while the other operation runs on this thread. With the
table's lock held by the expiry, the other operation waits; the pause ends by its timeout.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from symfonic_otel.spans.traces import Pending, SpanKey, SpanTable

# How long the paused expiry waits for the other operation; with the lock held that operation
# cannot run meanwhile, so the pause ends by this timeout.
_PAUSE_S = 0.1
_HELD: SpanKey = (0x7ACE, 1)
_OTHER: SpanKey = (0x7ACE, 2)


class _PausingStamp(float):
    """A creation stamp long past: the first age check taken on it pauses that thread."""

    def __new__(cls) -> _PausingStamp:
        stamp = super().__new__(cls, -1e9)
        stamp.paused, stamp.resume = threading.Event(), threading.Event()
        return stamp

    paused: threading.Event
    resume: threading.Event

    def __rsub__(self, now: object) -> float:
        if not self.paused.is_set():
            self.paused.set()
            self.resume.wait(_PAUSE_S)
        assert isinstance(now, float)
        return now - float(self)


def _end(table: SpanTable) -> list[Pending]:
    held = table.end(_HELD, relevant=True)
    return [] if held is None else [held]


def _hand_up(table: SpanTable) -> list[Pending]:
    return table.hand_up(_OTHER, Pending())  # the table is full: the oldest makes room


_RACERS: dict[str, Callable[[SpanTable], list[Pending]]] = {
    "the span ends": _end,
    "a new span hands up": _hand_up,
    "shutdown drains": SpanTable.drain,
    "a second expiry": SpanTable.expired,
}


@pytest.mark.parametrize("racer", list(_RACERS), ids=list(_RACERS))
def test_a_span_expiring_while_another_thread_takes_it_is_handed_out_once(racer: str) -> None:
    table = SpanTable(max_open=1, ttl_s=60.0)
    stamp = _PausingStamp()
    held = Pending(created=stamp)
    assert table.hand_up(_HELD, held) == []
    expired: list[Pending] = []
    errors: list[BaseException] = []

    def expire() -> None:
        try:
            expired.extend(table.expired())
        except BaseException as error:  # what the metric collection would see
            errors.append(error)

    thread = threading.Thread(target=expire)
    thread.start()
    try:
        assert stamp.paused.wait(2.0)
        taken = _RACERS[racer](table)
        stamp.resume.set()
    finally:
        stamp.resume.set()
        thread.join()
    assert errors == []
    handed_out = [pending for pending in [*expired, *taken] if pending is held]
    assert len(handed_out) == 1
    assert expired == [held]  # the expiry had picked it first: the other side finds it gone
    assert table.ended(_HELD)
