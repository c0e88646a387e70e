"""Live handlers, so shutdown and process exit close their open runs before the final flush.

A run still open when the process stops would otherwise vanish: its span never ends (so it is
never exported) and it is never counted as orphaned. ``Telemetry.shutdown()`` closes the runs
of the handlers that export to it before flushing; at interpreter exit every live handler's runs
are closed before the SDK's own exit hooks flush (``atexit`` runs the hook registered last
first, and the hook is registered with the first handler, after its providers exist).
"""

from __future__ import annotations

import atexit
import threading
import weakref
from typing import Protocol


class _Closable(Protocol):
    def close_open_runs(self) -> int: ...

    def exports_to(
        self, tracer_provider: object, meter_provider: object, is_global: bool
    ) -> bool: ...


_handlers: weakref.WeakSet[_Closable] = weakref.WeakSet()
_lock = threading.Lock()
_exit_hook_registered = False


def register(handler: _Closable) -> None:
    global _exit_hook_registered
    with _lock:
        _handlers.add(handler)
        if not _exit_hook_registered:
            atexit.register(close_all)
            _exit_hook_registered = True


def close_runs_of(tracer_provider: object, meter_provider: object, is_global: bool) -> int:
    """End as ``abandoned`` the open runs of every live handler exporting to these providers."""
    with _lock:
        handlers = list(_handlers)
    closed = 0
    for handler in handlers:
        try:
            if handler.exports_to(tracer_provider, meter_provider, is_global):
                closed += handler.close_open_runs()
        except Exception:  # one broken handler must not keep the others' runs open
            continue
    return closed


def close_all() -> int:
    """End the open runs of every live handler (the interpreter-exit hook)."""
    with _lock:
        handlers = list(_handlers)
    closed = 0
    for handler in handlers:
        try:
            closed += handler.close_open_runs()
        except Exception:
            continue
    return closed
