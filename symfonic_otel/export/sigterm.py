"""Opt-in: flush and shut telemetry down when the process gets SIGTERM.

``docker stop``, Kubernetes and systemd stop a process with SIGTERM, whose default action ends it
at once: no ``atexit`` hook runs, so the spans still queued, the metrics since the last export
(or scrape) and the runs still open are lost. A library installs no signal handler by itself;
``Telemetry.shutdown_on_sigterm()`` installs one on request. It shuts the telemetry down (bounded
by the timeout), then hands the signal on to whatever was installed before: a Python handler is
called, an ignored signal stays ignored, and the default action ends the process as SIGTERM
would have (exit status 143 from a shell).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Protocol

from symfonic_otel.logs import get_logger

__all__ = ["install"]

# The shutdown runs on a helper thread, joined at most this long after its own budget: a signal
# can land while the main thread holds a lock the shutdown needs, and a handler must not hang.
_JOIN_MARGIN_S = 1.0


class _ShutsDown(Protocol):
    def shutdown(self, timeout_millis: int = ...) -> bool: ...


Handler = Callable[[int, FrameType | None], object] | int | signal.Handlers | None


def install(telemetry: _ShutsDown, timeout_millis: int) -> Handler:
    """Install the SIGTERM handler; returns the handler it chains to (what was installed)."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError(
            "shutdown_on_sigterm() must be called from the main thread: Python runs signal "
            "handlers there only"
        )
    previous: Handler = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        worker = threading.Thread(
            target=telemetry.shutdown,
            kwargs={"timeout_millis": timeout_millis},
            name="symfonic-otel-sigterm-shutdown",
            daemon=True,
        )
        worker.start()
        worker.join(timeout_millis / 1000 + _JOIN_MARGIN_S)
        get_logger().info("symfonic_otel.sigterm_shutdown", flushed=not worker.is_alive())
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_IGN:
            return
        else:  # SIG_DFL, or a handler not installed from Python: end as SIGTERM would
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.raise_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_sigterm)
    return previous
