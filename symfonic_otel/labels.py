"""Bounded label values: metric attributes must stay low-cardinality whatever callers send."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable


class BoundedLabels:
    """Admits the first ``cap`` distinct values; later new values map to ``overflow``.

    Admitted values keep their label for the life of the process, so a series once created never
    changes name. Known raw inputs are served from a small memo without taking the lock.
    """

    __slots__ = ("_admitted", "_cap", "_lock", "_memo", "_memo_cap", "_normalise", "_overflow")

    def __init__(self, cap: int, overflow: str, normalise: Callable[[object], str]) -> None:
        self._cap = cap
        self._overflow = overflow
        self._normalise = normalise
        self._admitted: set[str] = set()
        self._memo: dict[object, str] = {}
        self._memo_cap = max(64, cap * 2)
        self._lock = threading.Lock()

    def __call__(self, raw: object) -> str:
        try:
            return self._memo[raw]
        except (KeyError, TypeError):
            pass
        value = self._normalise(raw)
        with self._lock:
            if value not in self._admitted:
                if len(self._admitted) >= self._cap:
                    value = self._overflow
                else:
                    self._admitted.add(value)
            if len(self._memo) < self._memo_cap:
                # Unhashable input is normalised every time, never cached.
                with contextlib.suppress(TypeError):
                    self._memo[raw] = value
        return value

    def __len__(self) -> int:
        return len(self._admitted)
