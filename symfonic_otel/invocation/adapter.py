"""The base of an adapter built on a ``RunBook``: its options, its handler and its open runs."""

from __future__ import annotations

import itertools
from typing import ClassVar, TypedDict

from symfonic_otel.core.loops import DEFAULT_LOOP_THRESHOLD, DEFAULT_RUNAWAY_CALLS
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.invocation.book import RunBook
from symfonic_otel.invocation.loops import loop_handler

__all__ = ["BookAdapter", "BookOptions"]


class BookOptions(TypedDict, total=False):
    """The options every adapter built on ``BookAdapter`` takes, by keyword."""

    handler: OTelCallbackHandler | None
    max_open_runs: int
    loop_threshold: int
    runaway_calls: int


class BookAdapter:
    """An adapter that keeps its runs in ``self._book``.

    ``handler`` shares an ``OTelCallbackHandler`` (its providers, content capture, tenant
    budgets) with other adapters; by default one on the global providers is built, with the
    loop options. ``max_open_runs`` bounds the runs followed at once (the oldest is ended as
    abandoned).
    """

    adapter_name: ClassVar[str] = "BookAdapter"
    max_keys: ClassVar[int] = 10_000  # keys (spans, scopes) indexed per run
    _book: RunBook

    def __init__(
        self,
        *,
        handler: OTelCallbackHandler | None = None,
        max_open_runs: int = 10_000,
        loop_threshold: int = DEFAULT_LOOP_THRESHOLD,
        runaway_calls: int = DEFAULT_RUNAWAY_CALLS,
    ) -> None:
        name = self.adapter_name
        core = loop_handler(name, handler, loop_threshold, runaway_calls)
        self._book = RunBook(core, name, max_open_runs, max_keys=self.max_keys)
        self._serials = itertools.count(1)

    def _next_id(self, prefix: str) -> str:
        """``prefix-N``, N counting every id the adapter made: the run and call ids it names
        itself are unique to it (``next`` on a count is atomic, so threads need no lock)."""
        return f"{prefix}-{next(self._serials)}"

    @property
    def handler(self) -> OTelCallbackHandler:
        """The core handler the adapter records through (shared or its own)."""
        return self._book.handler

    core = handler  # the same handler under the name every adapter shows it by

    @property
    def open_runs(self) -> int:
        """Runs started and not yet ended (bounded by the adapter's run cap)."""
        return self._book.open_runs
