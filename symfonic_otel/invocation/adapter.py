"""What every adapter built on a ``RunBook`` shows of it: its handler and its open runs."""

from __future__ import annotations

from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.invocation.book import RunBook

__all__ = ["BookAdapter"]


class BookAdapter:
    """A base for adapters that keep their runs in ``self._book``."""

    _book: RunBook

    @property
    def handler(self) -> OTelCallbackHandler:
        """The core handler the adapter records through (shared or its own)."""
        return self._book.handler

    @property
    def core(self) -> OTelCallbackHandler:
        return self._book.handler

    @property
    def open_runs(self) -> int:
        """Runs started and not yet ended (bounded by the adapter's run cap)."""
        return self._book.open_runs
