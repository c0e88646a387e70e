"""A clock for time-driven code (idle tenants, TTLs) that only moves when the test says so."""

from __future__ import annotations


class Clock:
    """Monotonic seconds, starting at ``now``; tests move it by assigning ``now``."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
