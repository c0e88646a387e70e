"""A failure reported from two threads at once is counted twice and logged once: the count's
read and store are one step against another report of the same kind.

The interleaving is forced, not hoped for: the kind is a ``str`` whose third hash (the count's
store, after its read) pauses the reporting thread while the same kind is reported on this
thread. With the log's lock held by the paused report, the other waits; the pause ends by its
timeout.
"""

from __future__ import annotations

import threading
from typing import Any

from symfonic_otel.logs import FailureLog

# How long the paused report waits for the other one (see the module docstring).
_PAUSE_S = 0.1


class _PausingKind(str):
    """A failure kind whose third hash pauses the thread, once armed."""

    hashes = -1  # not armed

    def arm(self) -> None:
        self.paused, self.resume = threading.Event(), threading.Event()
        self.hashes = 0

    def __hash__(self) -> int:
        if self.hashes >= 0:
            self.hashes += 1
            if self.hashes == 3:  # the cap check and the count's read were the first two
                self.paused.set()
                self.resume.wait(_PAUSE_S)
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)


class _Lines:
    """A logger that keeps the lines it is given."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def warning(self, event: str, **fields: Any) -> None:
        self.lines.append((event, fields))


def test_one_kind_reported_from_two_threads_at_once_counts_two_and_logs_once() -> None:
    lines = _Lines()
    log = FailureLog(logger=lines)
    kind = _PausingKind("span_processor")
    kind.arm()
    thread = threading.Thread(target=log.report, args=(kind, RuntimeError("one")))
    thread.start()
    try:
        assert kind.paused.wait(2.0)
        log.report("span_processor", RuntimeError("two"))
        kind.resume.set()
    finally:
        kind.resume.set()
        thread.join()
    assert log.counts() == {"span_processor": 2}
    assert len(lines.lines) == 1
