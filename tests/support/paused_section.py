"""Force one interleaving of two threads, without sleeps: pause a thread before a chosen line.

``PausedBefore(function, "source text")`` runs a call on a second thread with a trace function
that stops it once, just before the first line of ``function`` holding that text. The test then
runs the contending call on its own thread and lets the paused one go. Where the line is inside
the section a lock guards, the contending call waits on the lock until the pause ends (its
timeout, ``PAUSE_S``), so the outcome is the serial one; with the lock gone or narrowed, the
contending call runs in the middle of the section and the outcome shows it.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

# How long the paused thread waits to be let go; a guarded contender waits this long on the lock.
PAUSE_S = 0.1


def _code_and_line(function: Callable[..., Any], text: str, nth: int) -> tuple[CodeType, int]:
    function = inspect.unwrap(getattr(function, "__func__", function))
    code: CodeType = function.__code__
    lines, first = inspect.getsourcelines(function)
    found = [first + offset for offset, line in enumerate(lines) if text in line]
    if len(found) < nth:
        raise AssertionError(f"{text!r} is not {nth} times in {code.co_name}")
    return code, found[nth - 1]


class PausedBefore:
    """A thread paused (once) before the ``nth`` line of ``function`` that holds ``text``."""

    def __init__(self, function: Callable[..., Any], text: str, nth: int = 1) -> None:
        self._code, self._line = _code_and_line(function, text, nth)
        self.paused = threading.Event()
        self._resume = threading.Event()
        self._thread: threading.Thread | None = None
        self.result: Any = None
        self.error: BaseException | None = None
        self.reached = False

    def _trace(self, frame: FrameType, event: str, arg: object) -> Any:
        if frame.f_code is not self._code or self.paused.is_set():
            return None
        return self._local

    def _local(self, frame: FrameType, event: str, arg: object) -> Any:
        if event == "line" and frame.f_lineno == self._line and not self.paused.is_set():
            self.reached = True
            self.paused.set()
            self._resume.wait(PAUSE_S)
        return self._local

    def start(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> PausedBefore:
        """Run ``call`` on a thread until it reaches the line; fails if it never does."""

        def run() -> None:
            sys.settrace(self._trace)
            try:
                self.result = call(*args, **kwargs)
            except BaseException as error:  # handed to the test by ``finish``
                self.error = error
            finally:
                sys.settrace(None)
                self.paused.set()  # a call that never reached the line does not hang the test

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        assert self.paused.wait(2.0), "the paused call never started"
        assert self.reached, "the call ended without reaching the line"
        return self

    def finish(self) -> Any:
        """Let the paused call go on, wait for it, and give its result (or raise its error)."""
        self._resume.set()
        assert self._thread is not None
        self._thread.join(5.0)
        if self.error is not None:
            raise self.error
        return self.result

    def __enter__(self) -> PausedBefore:
        return self

    def __exit__(self, *exc: object) -> None:
        self._resume.set()
        if self._thread is not None:
            self._thread.join(5.0)
