"""The guard around every framework hook: telemetry never raises into the agent.

A failure is logged once per kind and counted in ``symfonic.telemetry.dropped_events``; the
hook returns ``None``. Hooks may come from several threads (worker threads, an event bus), so
the guarded work runs one at a time.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.logs import FailureLog

__all__ = ["Guard"]


class Guard:
    """Runs an adapter's hook work under one lock; failures are reported, never raised.

    ``failures``: the adapter's own once-per-kind log (read back by its
    ``internal_failures()``); without it the handler's log reports them.
    """

    __slots__ = ("_failures", "_handler", "_lock", "_prefix")

    def __init__(
        self, handler: OTelCallbackHandler, prefix: str, failures: FailureLog | None = None
    ) -> None:
        self._handler = handler
        self._prefix = prefix
        self._failures = failures
        self._lock = threading.RLock()

    def __call__(self, kind: str, work: Callable[..., Any], *args: Any) -> Any:
        try:
            with self._lock:
                return work(*args)
        except Exception as exc:  # never into the agent
            self.report(kind, exc)
            return None

    def hook(self, kind: str, work: Callable[..., Any]) -> Callable[..., None]:
        """``work`` as a framework's hook: every call runs it guarded as ``kind``."""

        def hook(*args: Any) -> None:
            self(kind, work, *args)

        return hook

    def report(self, kind: str, exc: BaseException | None = None) -> None:
        """Count one failure (or dropped fact) of ``kind``; never raises."""
        label = f"{self._prefix}.{kind}"
        with contextlib.suppress(Exception):  # reporting must never fail the agent either
            if self._failures is not None:
                self._failures.report(label, exc)
                self._handler.adapter_failed(label)
            else:
                self._handler.adapter_failed(label, exc)

    def counts(self) -> dict[str, int]:
        """The adapter's own failures per kind (empty when the handler's log keeps them)."""
        return self._failures.counts() if self._failures is not None else {}
