"""Deferred metric recording: the agent's thread queues, the SDK's collection applies.

A synchronous SDK measurement costs tens of microseconds (attribute validation, hashing, locks),
and a run records a dozen of them. Instead, the hot path appends ``(instrument method, value,
attributes)`` to a deque, which is thread-safe and cheap, and the queue is applied to the real
instruments when a metric reader collects: an observable instrument's callback runs at the start
of every collection, before the SDK reads its aggregations, so nothing queued is missed.

The queue is bounded: past ``cap`` pending measurements the oldest is applied inline, so memory
stays flat even when no reader ever collects, and nothing is dropped.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from opentelemetry.metrics import CallbackOptions, Meter, Observation

Apply = Callable[[float, Mapping[str, Any]], None]
_HOOK_NAME: Final = "symfonic.telemetry.collection_hook"
DEFAULT_CAP: Final = 16_384


class DeferredRecorder:
    """Queues measurements; drains them into the SDK at collection time (or when full)."""

    __slots__ = ("__weakref__", "_cap", "_queue", "failed")

    def __init__(self, cap: int = DEFAULT_CAP) -> None:
        self._cap = cap
        self.failed = 0
        self._queue: deque[tuple[Apply, float, Mapping[str, Any]]] = deque()

    def record(self, apply: Apply, value: float, attributes: Mapping[str, Any]) -> None:
        queue = self._queue
        queue.append((apply, value, attributes))
        if len(queue) > self._cap:
            self._apply_one()

    def drain(self) -> int:
        """Apply every queued measurement; returns how many were applied."""
        applied = 0
        while self._apply_one():
            applied += 1
        return applied

    @property
    def pending(self) -> int:
        return len(self._queue)

    def _apply_one(self) -> bool:
        try:
            apply, value, attributes = self._queue.popleft()
        except IndexError:
            return False
        try:
            apply(value, attributes)
        except Exception:  # one bad measurement must not stall the rest of the queue
            self.failed += 1
        return True


_recorders: weakref.WeakKeyDictionary[Meter, DeferredRecorder] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def recorder_for(meter: Meter) -> DeferredRecorder:
    """The one recorder of ``meter``: handlers sharing a meter share its queue and its hook.

    The SDK registers an observable instrument name once per meter, so a second hook would
    never be called; one recorder per meter avoids that.
    """
    with _lock:
        recorder = _recorders.get(meter)
        if recorder is None:
            recorder = DeferredRecorder()
            _recorders[meter] = recorder

            # The hook keeps its recorder alive as long as the meter: a hook name is registered
            # once per meter, so a recorder made later for the same meter would never drain.
            def collection_hook(
                options: CallbackOptions, recorder: DeferredRecorder = recorder
            ) -> Iterable[Observation]:
                recorder.drain()
                return ()

            meter.create_observable_gauge(
                _HOOK_NAME,
                callbacks=[collection_hook],
                description="Applies queued measurements; reports nothing itself.",
            )
        return recorder
