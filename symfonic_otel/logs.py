"""The package's logs — structured, never content — and log-trace correlation for applications.

* ``get_logger``: the logger every line of the package goes through. When the application has
  configured structlog, a line goes through its pipeline (processors, renderer, sinks); otherwise
  it is a standard ``logging`` record of the ``symfonic_otel`` logger, which carries a
  ``NullHandler``: an application that configures nothing sees nothing, one that configures
  ``logging`` gets ``event key=value …`` messages whose fields are also record attributes (JSON
  formatters pick them up).
* No line carries content, whatever the configuration. ``exc_info`` never reaches a renderer:
  it becomes ``error_type`` and ``error_at`` (module, line, function of the innermost frame).
  A traceback's locals hold the user's query and the model's draft, and an exception's own
  message often quotes user data (a ``KeyError`` of a prompt key, a validation error echoing
  the input), so neither is written. Field values are kept only as scalars or short sequences
  of scalars; any other object is replaced by its type name, so an event's repr never leaks.
* ``add_trace_context``: a structlog processor that stamps each line with the ``trace_id`` /
  ``span_id`` of the current span (the stdlib path adds them itself).
* ``FailureLog``: the package's own failures, logged once per kind and counted after that (a
  bug on the hot path must not become one log line per event).
"""

from __future__ import annotations

import logging
import sys
import threading
import traceback
import uuid
from collections.abc import Mapping, MutableMapping
from typing import Any, Final

import structlog
from opentelemetry import trace

__all__ = [
    "LOGGER_NAME",
    "FailureLog",
    "PackageLogger",
    "add_trace_context",
    "describe_exception",
    "get_logger",
    "run_id_of",
    "safe_fields",
]

LOGGER_NAME: Final = "symfonic_otel"
_OTHER_KIND: Final = "other"
_MAX_TEXT: Final = 200
_MAX_ITEMS: Final = 32
# Keyword names the loggers own; caller fields with these names are renamed, not dropped.
_RESERVED_FIELDS: Final = frozenset({"event", "stacklevel"})
# ``LogRecord`` attributes ``extra`` may not overwrite (``makeRecord`` raises on them).
_RECORD_ATTRIBUTES: Final = frozenset(
    {*vars(logging.LogRecord("", 0, "", 0, "", None, None)), "message", "asctime"}
)

# The library convention: records of the package reach the application's handlers, never
# Python's "last resort" handler that prints warnings to stderr of an unconfigured process.
logging.getLogger(LOGGER_NAME).addHandler(logging.NullHandler())


def get_logger(name: str = LOGGER_NAME) -> PackageLogger:
    """The package's logger (``name`` is kept under ``symfonic_otel`` so one filter silences all).

    ``.debug / .info / .warning / .error(event, **fields)`` never raise and never write content.
    """
    if name != LOGGER_NAME and not name.startswith(LOGGER_NAME + "."):
        name = f"{LOGGER_NAME}.{name}"
    return PackageLogger(name)


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    module = getattr(cls, "__module__", "") or ""
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def describe_exception(exc: BaseException) -> dict[str, str]:
    """What a log line may say about ``exc``: its type and where it was raised. Never its text."""
    described = {"error_type": _type_name(exc)}
    # Innermost frame only; no source line read, no local kept.
    frames = list(traceback.walk_tb(exc.__traceback__))
    if frames:
        frame, lineno = frames[-1]
        module = frame.f_globals.get("__name__", "?")
        described["error_at"] = f"{module}:{lineno} in {frame.f_code.co_name}"
    return described


def _safe_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value if len(value) <= _MAX_TEXT else value[:_MAX_TEXT] + "…"
    if isinstance(value, list | tuple | set | frozenset):
        items = list(value)
        return [
            item if item is None or isinstance(item, bool | int | float) else _scalar_text(item)
            for item in items[:_MAX_ITEMS]
        ]
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, BaseException):
        return _type_name(value)
    return f"<{type(value).__qualname__}>"  # an object's repr may hold content: its type only


def _scalar_text(item: Any) -> str:
    if isinstance(item, str):
        return item if len(item) <= _MAX_TEXT else item[:_MAX_TEXT] + "…"
    return f"<{type(item).__qualname__}>"


def safe_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` fit for a log line: ``exc_info`` described, other values made content-free."""
    safe: dict[str, Any] = {}
    exc = fields.get("exc_info")
    if exc is True:
        exc = sys.exc_info()[1]
    elif isinstance(exc, tuple) and len(exc) == 3:
        exc = exc[1]
    for key, value in fields.items():
        if key in ("exc_info", "stack_info"):
            continue
        name = str(key)
        safe[f"field_{name}" if name in _RESERVED_FIELDS else name] = _safe_value(value)
    if isinstance(exc, BaseException):
        for key, value in describe_exception(exc).items():
            safe.setdefault(key, value)
    return safe


def run_id_of(source: Any) -> str | None:
    """``source.run_id`` if it is a plain id (str, UUID, int), for a failure's log line."""
    try:
        value = getattr(source, "run_id", None)
    except Exception:  # a malformed event may raise on attribute access
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | uuid.UUID):
        return None
    text = str(value)
    return text if len(text) <= 128 and text.isprintable() else None


def _render(event: str, fields: Mapping[str, Any]) -> str:
    parts = [event]
    for key, value in fields.items():
        if isinstance(value, str) and value and not any(c.isspace() or c in "='\"" for c in value):
            parts.append(f"{key}={value}")
        else:
            parts.append(f"{key}={value!r}")
    return " ".join(parts)


class PackageLogger:
    """One logger name; routes each line to structlog if configured, else to ``logging``."""

    __slots__ = ("_stdlib", "_structlog", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._stdlib = logging.getLogger(name)
        self._structlog: Any = structlog.get_logger(name)  # a lazy proxy: follows reconfiguration

    def debug(self, event: str, **fields: Any) -> None:
        self._log(logging.DEBUG, "debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._log(logging.INFO, "info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._log(logging.WARNING, "warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._log(logging.ERROR, "error", event, fields)

    def _log(self, level: int, method: str, event: str, fields: dict[str, Any]) -> None:
        try:
            if structlog.is_configured():
                getattr(self._structlog, method)(str(event), **safe_fields(fields))
                return
            if not self._stdlib.isEnabledFor(level):
                return
            safe = safe_fields(fields)
            add_trace_context(None, method, safe)
            extra = {(f"field_{k}" if k in _RECORD_ATTRIBUTES else k): v for k, v in safe.items()}
            # No args: the rendered text is the message as is. stacklevel 3: the record names the
            # package's call site, not this wrapper.
            self._stdlib.log(level, _render(str(event), safe), extra=extra, stacklevel=3)
        except Exception:  # a log line must never break the code that writes it
            pass

    def __repr__(self) -> str:
        return f"PackageLogger({self.name!r})"


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
    either. The line names the kind, the exception's type and where it was raised, and the
    fields given (``run_id`` …), made content-free. The number of distinct kinds is capped
    (``max_kinds``): kinds past the cap share one ``"other"`` bucket, so even kinds built from
    data cannot grow memory or log volume without bound. Thread-safe.
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
            entry: dict[str, Any] = {"kind": label}
            if isinstance(exc, BaseException):
                entry.update(describe_exception(exc))
            for key, value in safe_fields(fields).items():
                entry[f"field_{key}" if key in entry or key == "note" else key] = value
            entry["note"] = "first occurrence of this kind; later ones are counted, not logged"
            logger = self._logger if self._logger is not None else get_logger()
            logger.warning("symfonic_otel.internal_failure", **entry)
        except Exception:  # reporting a failure must never become one
            pass

    def counts(self) -> dict[str, int]:
        """A snapshot of failures per kind since creation (logged or not)."""
        with self._lock:
            return dict(self._counts)

    def __len__(self) -> int:
        with self._lock:
            return len(self._counts)
