"""The SIGTERM handler called in process: where and how it shuts down, what it hands on."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType

import pytest
from structlog.testing import capture_logs

from symfonic_otel.export import sigterm
from symfonic_otel.export.sigterm import install


class Recorder:
    """Shuts down by recording where and with what budget it was asked to."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str, bool]] = []

    def shutdown(self, timeout_millis: int = 30_000) -> bool:
        thread = threading.current_thread()
        self.calls.append((timeout_millis, thread.name, thread.daemon))
        return True


@pytest.fixture(autouse=True)
def restore_sigterm() -> Iterator[None]:
    before = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, before)


@pytest.fixture
def held_sigterm() -> Iterator[Callable[[], bool]]:
    """SIGTERM blocked on this thread: a signal the handler raises waits, and is taken back.

    Yields whether one was raised (and takes it, so it never reaches the process)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})

    def raised() -> bool:
        return signal.sigtimedwait({signal.SIGTERM}, 0) is not None

    try:
        yield raised
    finally:
        while raised():
            pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def _handler() -> object:
    return signal.getsignal(signal.SIGTERM)


def test_the_handler_shuts_down_on_its_own_thread_then_chains(
    held_sigterm: Callable[[], bool],
) -> None:
    handed_on: list[tuple[int, FrameType | None]] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: handed_on.append((signum, frame)))
    telemetry = Recorder()
    install(telemetry, 250)
    handler = _handler()
    assert callable(handler)
    frame = sys._getframe()
    with capture_logs() as logs:
        handler(signal.SIGTERM, frame)
    assert telemetry.calls == [(250, "symfonic-otel-sigterm-shutdown", True)]
    assert handed_on == [(signal.SIGTERM, frame)]  # the previous handler gets the signal's frame
    assert not held_sigterm()  # handed on, not raised again
    assert {"event": "symfonic_otel.sigterm_shutdown", "flushed": True, "log_level": "info"} in [
        {k: v for k, v in entry.items() if k in ("event", "flushed", "log_level")} for entry in logs
    ]


class SlowShutdown:
    """Shuts down in a few milliseconds (a collector slow to take the last batch)."""

    def __init__(self) -> None:
        self.done = threading.Event()

    def shutdown(self, timeout_millis: int = 30_000) -> bool:
        threading.Event().wait(0.005)
        self.done.set()
        return True


def test_the_handler_waits_the_shutdown_budget_before_handing_the_signal_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No margin past the budget: whatever wait there is, is the shutdown's own timeout.
    monkeypatch.setattr(sigterm, "_JOIN_MARGIN_S", 0.0)
    telemetry = SlowShutdown()
    done_when_handed_on: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: done_when_handed_on.append(telemetry.done.is_set()))
    install(telemetry, 2_000)
    handler = _handler()
    assert callable(handler)
    with capture_logs() as logs:
        handler(signal.SIGTERM, None)
    assert done_when_handed_on == [True]
    assert [e["flushed"] for e in logs if e["event"] == "symfonic_otel.sigterm_shutdown"] == [True]


def test_an_ignored_sigterm_stays_ignored(held_sigterm: Callable[[], bool]) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    telemetry = Recorder()
    assert install(telemetry, 100) == signal.SIG_IGN
    handler = _handler()
    assert callable(handler)
    handler(signal.SIGTERM, None)  # returns: the process goes on
    assert len(telemetry.calls) == 1
    assert not held_sigterm()


def test_with_no_handler_before_the_process_ends_as_sigterm_would(
    held_sigterm: Callable[[], bool],
) -> None:
    """SIGTERM's default action comes back and the signal is raised again, after the shutdown
    (held here, so the test process goes on)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    telemetry = Recorder()
    assert install(telemetry, 100) == signal.SIG_DFL
    handler = _handler()
    assert callable(handler)
    handler(signal.SIGTERM, None)
    assert len(telemetry.calls) == 1
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert held_sigterm()


class HangingShutdown:
    """A shutdown stuck on a dead collector (for at most a second)."""

    def shutdown(self, timeout_millis: int = 30_000) -> bool:
        threading.Event().wait(1.0)
        return True


def test_a_hanging_shutdown_is_waited_for_its_budget_and_the_margin_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sigterm, "_JOIN_MARGIN_S", 0.05)
    handed_on: list[float] = []
    signal.signal(signal.SIGTERM, lambda *_: handed_on.append(time.monotonic()))
    install(HangingShutdown(), 50)
    handler = _handler()
    assert callable(handler)
    started = time.monotonic()
    with capture_logs() as logs:
        handler(signal.SIGTERM, None)
    [waited] = [at - started for at in handed_on]
    assert 0.1 <= waited < 0.5  # 50 ms of budget and 50 ms of margin, not the hung second
    assert [e["flushed"] for e in logs if e["event"] == "symfonic_otel.sigterm_shutdown"] == [False]


def test_a_zero_budget_still_waits_the_margin_for_a_quick_shutdown() -> None:
    telemetry = SlowShutdown()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    install(telemetry, 0)
    handler = _handler()
    assert callable(handler)
    with capture_logs() as logs:
        handler(signal.SIGTERM, None)
    assert telemetry.done.is_set()
    assert [e["flushed"] for e in logs if e["event"] == "symfonic_otel.sigterm_shutdown"] == [True]


def test_installing_off_the_main_thread_is_refused_with_the_reason() -> None:
    errors: list[BaseException] = []

    def off_main() -> None:
        try:
            install(Recorder(), 100)
        except RuntimeError as error:
            errors.append(error)

    worker = threading.Thread(target=off_main)
    worker.start()
    worker.join(5)
    assert [str(e) for e in errors] == [
        "shutdown_on_sigterm() must be called from the main thread: Python runs signal "
        "handlers there only"
    ]
