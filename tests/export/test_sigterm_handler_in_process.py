"""The SIGTERM handler called in process: where and how it shuts down, what it hands on."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
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


def _handler() -> object:
    return signal.getsignal(signal.SIGTERM)


def test_the_handler_shuts_down_on_its_own_thread_then_chains() -> None:
    handed_on: list[tuple[int, FrameType | None]] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: handed_on.append((signum, frame)))
    telemetry = Recorder()
    install(telemetry, 250)
    handler = _handler()
    assert callable(handler)
    with capture_logs() as logs:
        handler(signal.SIGTERM, None)
    assert telemetry.calls == [(250, "symfonic-otel-sigterm-shutdown", True)]
    assert handed_on == [(signal.SIGTERM, None)]
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


def test_an_ignored_sigterm_stays_ignored() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    telemetry = Recorder()
    assert install(telemetry, 100) == signal.SIG_IGN
    handler = _handler()
    assert callable(handler)
    handler(signal.SIGTERM, None)  # returns: the process goes on
    assert len(telemetry.calls) == 1


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
