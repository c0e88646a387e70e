"""Bounded label values: metric attributes must stay low-cardinality whatever callers send."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

# Raw inputs longer than this are normalised every time rather than memoised, so the memo's
# memory is bounded in bytes, not only in entries.
_MEMO_MAX_KEY_CHARS = 256


class BoundedLabels:
    """Admits the first ``cap`` distinct values; later new values map to ``overflow``.

    Admitted values keep their label for the life of the process, so a series once created never
    changes name. Values in ``always`` (the package's own reserved labels) are never capped and
    take no slot. Known raw inputs are served from a small memo without taking the lock.
    """

    __slots__ = (
        "_admitted",
        "_always",
        "_cap",
        "_lock",
        "_memo",
        "_memo_cap",
        "_normalise",
        "_overflow",
    )

    def __init__(
        self,
        cap: int,
        overflow: str,
        normalise: Callable[[object], str],
        always: Iterable[str] = (),
    ) -> None:
        self._cap = cap
        self._overflow = overflow
        self._normalise = normalise
        self._always = frozenset((*always, overflow))
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
        if value in self._always:
            return value
        with self._lock:
            if value not in self._admitted:
                if len(self._admitted) >= self._cap:
                    value = self._overflow
                else:
                    self._admitted.add(value)
            # Only short strings are memoised: other inputs (and long ones) are normalised
            # every time rather than kept alive by the memo.
            if (
                isinstance(raw, str)
                and len(raw) <= _MEMO_MAX_KEY_CHARS
                and len(self._memo) < self._memo_cap
            ):
                self._memo[raw] = value
        return value

    def __len__(self) -> int:
        return len(self._admitted)
