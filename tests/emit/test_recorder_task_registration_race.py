"""Two handlers registering their collection tasks on one recorder at once (two handlers built
on one provider on two threads): the registrations take turns under the lock, so both tasks run
at every collection and neither handler's housekeeping (its repeated-call counts) goes missing.

The interleaving is forced, not hoped for: a task registered before is a method whose
rebuilding from its weak reference (which each registration does while pruning dead tasks)
pauses the first registering thread, while the second registers on this thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from symfonic_otel.emit.recorder import DeferredRecorder

# How long the paused registration waits for the other; with the lock held the other cannot
# run meanwhile, so the pause ends by this timeout.
_PAUSE_S = 0.1


class _Housekeeping:
    def __init__(self) -> None:
        self.runs = 0
        self.armed = False
        self.paused, self.resume = threading.Event(), threading.Event()

    def run(self) -> None:
        self.runs += 1


class _PausingMethod:
    """A bound method of ``_Housekeeping`` that, rebuilt while its object is armed, pauses."""

    def __init__(self, func: Callable[[_Housekeeping], None], obj: _Housekeeping) -> None:
        self.__func__, self.__self__ = func, obj
        if obj.armed:
            obj.armed = False
            obj.paused.set()
            obj.resume.wait(_PAUSE_S)

    def __call__(self) -> None:
        self.__func__(self.__self__)


def test_tasks_registered_on_two_threads_at_once_both_run_at_each_collection() -> None:
    recorder = DeferredRecorder()
    earlier, first, second = _Housekeeping(), _Housekeeping(), _Housekeeping()
    recorder.on_collect(_PausingMethod(_Housekeeping.run, earlier))
    earlier.armed = True
    registering = threading.Thread(target=recorder.on_collect, args=(first.run,))
    registering.start()
    try:
        assert earlier.paused.wait(2.0)
        recorder.on_collect(second.run)
        earlier.resume.set()
    finally:
        earlier.resume.set()
        registering.join()
    for _ in range(2):
        recorder.collect()
    assert (earlier.runs, first.runs, second.runs) == (2, 2, 2)
    assert recorder.failed == 0
