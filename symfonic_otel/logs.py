"""Structured logging for the package, and log-trace correlation for applications.

Two things live here:

* ``add_trace_context``: a structlog processor that stamps every log event with the
  ``trace_id`` / ``span_id`` of the span current when the line is written, so a log line found in
  any log store leads straight to its trace (and back).
* ``FailureLog``: how the package reports its *own* failures. Telemetry code runs on the agent's
  hot path; a bug that fires once per event must not turn into one log line per event (a log
  flood is an outage of its own). The first failure of each kind is logged with its traceback;
  later ones are only counted, and the counts stay readable for tests and health checks.
"""

from __future__ import annotations

import threading
from collections.abc import MutableMapping
from typing import Any, Final

import structlog
from opentelemetry import trace

__all__ = ["LOGGER_NAME", "FailureLog", "add_trace_context", "get_logger"]

LOGGER_NAME: Final = "symfonic_otel"
_OTHER_KIND: Final = "other"
# Keyword names structlog's bound-logger methods own; caller fields with these names are renamed
# instead of raising ``TypeError: got multiple values``.
_RESERVED_FIELDS: Final = frozenset({"event", "exc_info", "kind"})


def get_logger() -> Any:
    """The package's structlog logger.

    One name for every line the package writes, so operators can filter or silence it (it is a
    stdlib logger name too when structlog is routed through ``logging``). Typed ``Any`` because
    the concrete bound-logger class depends on the application's ``structlog.configure``.
    """
    return structlog.get_logger(LOGGER_NAME)


def add_trace_context(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: add ``trace_id`` (32 hex) and ``span_id`` (16 hex) of the current span.

    Only a *valid* span context is written (outside any span nothing is added, rather than
    all-zero ids that would match every uncorrelated line). Ids already present in the event are
    left alone: an explicit value from the caller wins. The hex format is the W3C / OTLP JSON one
    that Grafana, Tempo and Jaeger search on.
    """
    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        event_dict.setdefault("trace_id", trace.format_trace_id(context.trace_id))
        event_dict.setdefault("span_id", trace.format_span_id(context.span_id))
    return event_dict


class FailureLog:
    """Once-per-kind failure reporting: log the first occurrence, count the rest.

    ``report`` is called from ``except`` blocks that must never raise, so it never raises
    either. The number of distinct kinds is capped (``max_kinds``): kinds past the cap share one
    ``"other"`` bucket, so even kinds built from data cannot grow memory or log volume without
    bound. Thread-safe: handlers are called from any thread the agent runs on.
    """

    __slots__ = ("_counts", "_lock", "_logger", "_max_kinds")

    def __init__(self, *, max_kinds: int = 256, logger: Any | None = None) -> None:
        if isinstance(max_kinds, bool) or not isinstance(max_kinds, int) or max_kinds < 1:
            raise ValueError(f"max_kinds must be an int >= 1, got {max_kinds!r}")
        self._max_kinds = max_kinds
        self._logger = logger
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def report(self, kind: str, exc: BaseException | None = None, **fields: Any) -> None:
        """Record one failure of ``kind``; log it at WARNING only if it is the first of its kind."""
        try:
            label = kind if isinstance(kind, str) else str(kind)
            with self._lock:
                if label not in self._counts and len(self._counts) >= self._max_kinds:
                    fields.setdefault("original_kind", label[:128])
                    label = _OTHER_KIND
                count = self._counts.get(label, 0) + 1
                self._counts[label] = count
            if count != 1:
                return
            safe = {
                (f"field_{key}" if key in _RESERVED_FIELDS else key): value
                for key, value in fields.items()
            }
            logger = self._logger if self._logger is not None else get_logger()
            logger.warning(
                "symfonic_otel.internal_failure",
                kind=label,
                exc_info=exc if exc is not None else False,
                note="first occurrence of this kind; later ones are counted, not logged",
                **safe,
            )
        except Exception:  # reporting a failure must never become one
            pass

    def counts(self) -> dict[str, int]:
        """A snapshot of failures per kind since creation (logged or not)."""
        with self._lock:
            return dict(self._counts)

    def __len__(self) -> int:
        with self._lock:
            return len(self._counts)
