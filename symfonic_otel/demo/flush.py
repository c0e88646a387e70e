"""The demo's way out: a bounded final flush that stops waiting once export is seen failing.

With no collector listening, the OTLP exporters retry with back-off up to their timeout (10 s by
default), once per signal, and the SDK writes a "Transient error … retrying" or "Failed to
export" line per attempt. An interactive demo should neither sit silent for that long nor flood
the terminal: the SDK's export warnings are counted here instead of printed (the demo says once
what happened), and the final flush ends early as soon as an attempt fails. Past the flush,
``Telemetry.shutdown`` with a short timeout shuts the exporters down, which aborts their retry.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import urllib.parse
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final, Protocol

from symfonic_otel.environment import TelemetrySettingWarning

__all__ = [
    "ExportWarnings",
    "bounded_flush",
    "otlp_endpoints",
    "quiet_logs",
    "refuse_bad_settings",
]

# The OTLP exporters, the HTTP transport and the SDK's batch processor and metric reader.
_SDK_LOGGERS: Final = ("opentelemetry.exporter", "opentelemetry.sdk")
_PACKAGE_LOGGER: Final = "symfonic_otel"
_POLL_S: Final = 0.05


_DEFAULT_PORTS: Final = {"grpc": 4317, "http/protobuf": 4318}
_SIGNALS: Final = (  # (signal, its endpoint variable, its protocol variable)
    ("traces", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
    ("metrics", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"),
)


def otlp_endpoints() -> tuple[list[str], bool]:
    """Where the OTLP exporters send, resolved as the SDK does, and whether a variable set it.

    Per signal: its own ``OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT``, else
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` (plus ``/v1/<signal>`` over HTTP), else the protocol's
    default on localhost. Credentials in a URL are left out.
    """
    general = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    endpoints: list[str] = []
    configured = False
    for signal, endpoint_variable, protocol_variable in _SIGNALS:
        protocol = "grpc"
        for variable in (protocol_variable, "OTEL_EXPORTER_OTLP_PROTOCOL"):
            raw = os.environ.get(variable, "").strip().lower()
            if raw:
                protocol = raw if raw in _DEFAULT_PORTS else "grpc"  # an unknown one falls back
                break
        path = f"/v1/{signal}" if protocol == "http/protobuf" else ""
        specific = os.environ.get(endpoint_variable, "").strip()
        if specific or general:
            configured = True
            endpoint = specific or general.rstrip("/") + path
        else:
            endpoint = f"http://localhost:{_DEFAULT_PORTS[protocol]}{path}"
        parts = urllib.parse.urlsplit(endpoint)
        if parts.hostname is not None and "@" in parts.netloc:
            netloc = parts.netloc.rpartition("@")[2]
            endpoint = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
        if endpoint not in endpoints:
            endpoints.append(endpoint)
    return endpoints, configured


class _Flushable(Protocol):
    def force_flush(self, timeout_millis: int = ...) -> bool: ...


class ExportWarnings(logging.Handler):
    """Counts the SDK's warnings and errors (export failures, retries) instead of printing them."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self._lock_count = threading.Lock()
        self._count = 0

    @property
    def count(self) -> int:
        with self._lock_count:
            return self._count

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock_count:
            self._count += 1


@contextmanager
def quiet_logs() -> Iterator[ExportWarnings]:
    """For the demo's duration: the SDK's warnings counted, the package's own lines muted.

    The package's lines (one INFO line per silent bail, of which the demo makes many) tell what
    the summary already shows. The loggers are restored afterwards: ``run_demo`` may run inside
    a process that logs.
    """
    counter = ExportWarnings()
    saved: list[tuple[logging.Logger, bool]] = []
    for name in (*_SDK_LOGGERS, _PACKAGE_LOGGER):
        logger = logging.getLogger(name)
        saved.append((logger, logger.propagate))
        if name != _PACKAGE_LOGGER:
            logger.addHandler(counter)
        logger.propagate = False
    try:
        yield counter
    finally:
        for logger, propagate in saved:
            logger.removeHandler(counter)
            logger.propagate = propagate


def bounded_flush(telemetry: _Flushable, warnings: ExportWarnings, budget_s: float) -> bool:
    """Flush on a helper thread; True once it finished, False past ``budget_s`` or on a failure.

    "Failure" is a new SDK warning after the flush began: a refused or unreachable collector
    fails within milliseconds, and waiting out the retries would not change the outcome. Ctrl-C
    reaches the caller (the wait is on the main thread); the helper thread is a daemon.
    """
    done = threading.Event()
    before = warnings.count
    flushed: list[bool] = []

    def flush() -> None:
        try:
            flushed.append(bool(telemetry.force_flush(timeout_millis=int(budget_s * 1000))))
        finally:
            done.set()

    threading.Thread(target=flush, name="symfonic-otel-demo-flush", daemon=True).start()
    deadline = time.monotonic() + budget_s
    while not done.wait(_POLL_S):
        if warnings.count > before or time.monotonic() >= deadline:
            return False
    return flushed == [True] and warnings.count == before


@contextmanager
def refuse_bad_settings() -> Iterator[None]:
    """Inside, a bad telemetry variable raises ``TelemetrySettingWarning`` instead of warning.

    A library warns and goes on with the default; the demo is a command the user just typed, so
    it names the variable on one line and exits with 2. The variables are read before any
    exporter is built, so nothing is left to shut down (or to print about) when one is bad.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error", TelemetrySettingWarning)
        yield
