"""A run's loop is detected once, even when two of its parallel tools cross the threshold at
the same moment: the second finds the first's detection and reports none.

The interleaving is forced, not hoped for: the run's loop state is a ``RunLoops`` whose
``detected`` pauses the first thread to read it, while the second thread's detection runs on
this thread. With the detection's lock held by the paused thread, the second waits; the pause
ends by its timeout.
"""

from __future__ import annotations

import threading

from symfonic_otel import semconv
from symfonic_otel.core.loops import Detection, RunLoops

# How long the paused detection waits for the other one (see the module docstring).
_PAUSE_S = 0.1


class _PausingLoops(RunLoops):
    """A run's loop state whose first read of ``detected`` pauses that thread."""

    def __init__(self) -> None:
        self.paused, self.resume = threading.Event(), threading.Event()
        self._detected: str | None = None
        super().__init__()

    @property  # type: ignore[override]
    def detected(self) -> str | None:
        if not self.paused.is_set():
            self.paused.set()
            self.resume.wait(_PAUSE_S)
        return self._detected

    @detected.setter
    def detected(self, kind: str | None) -> None:
        self._detected = kind


def test_two_threads_detecting_one_run_s_loop_at_once_report_it_once() -> None:
    run = _PausingLoops()
    kind = semconv.LOOP_REPEATED_TOOL_CALL
    found: list[Detection | None] = []
    thread = threading.Thread(target=lambda: found.append(run.detect(kind, "search", 3)))
    thread.start()
    try:
        assert run.paused.wait(2.0)
        found.append(run.detect(kind, "fetch", 3))
        run.resume.set()
    finally:
        run.resume.set()
        thread.join()
    assert [detection for detection in found if detection is not None] == [
        Detection(kind, "search", 3)
    ]
    assert run.detected == kind
