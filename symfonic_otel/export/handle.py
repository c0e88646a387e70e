"""The ``Telemetry`` handle that ``configure_telemetry`` returns: a lifecycle that never hangs.

``force_flush`` and ``shutdown`` run the SDK calls on helper threads and stop waiting at the
deadline, because the SDK's own calls can block far longer than asked (a hung collector holds an
export for the whole OTLP timeout, retries included). Shutdown closes the handlers' open runs
first, then flushes traces, then metrics, and reports every span lost on the way.
"""

from __future__ import annotations

import atexit
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter

from symfonic_otel.export import lifecycle, sigterm
from symfonic_otel.export.retention import OutcomeRetentionSpanProcessor
from symfonic_otel.export.span_export import DROP_REASONS, DropCountingBatchSpanProcessor
from symfonic_otel.logs import get_logger

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

__all__ = ["Telemetry", "check_timeout"]

DEFAULT_TIMEOUT_MS: Final = 10_000
# Share of the shutdown budget the traces may use before the metrics get the rest: the metrics
# flush last so that the spans lost during the final trace export are counted in it.
_TRACES_SHARE: Final = 0.6
# How long the SDK's metric shutdown, on its helper thread, may wait for an export in flight
# before closing the exporter (the OTLP exporters' own timeout is 10 s by default).
_SDK_SHUTDOWN_WAIT_MS: Final = 30_000
_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")


class Telemetry:
    """What ``configure_telemetry`` built: providers plus a safe lifecycle.

    ``force_flush`` and ``shutdown`` run the SDK calls on a helper thread and stop waiting at the
    deadline, because the SDK's own calls can block far longer than asked (a hung collector holds
    an export for the whole OTLP timeout, retries included). ``shutdown`` is idempotent, also runs
    at interpreter exit (not on SIGTERM: see ``shutdown_on_sigterm``), and always closes the
    Prometheus HTTP server. Use it as a context
    manager to scope telemetry to a block (tests, scripts, CLI commands).
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider,
        meter_provider: MeterProvider,
        resource: Resource,
        span_processors: Sequence[DropCountingBatchSpanProcessor],
        exporters: Sequence[SpanExporter | MetricExporter],
        prometheus_server: WSGIServer | None,
        prometheus_thread: threading.Thread | None,
        is_global: bool,
        retention: OutcomeRetentionSpanProcessor | None = None,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.resource = resource
        self.is_global = is_global
        # Outcome retention in front of the OTLP trace export (``healthy_trace_ratio`` < 1.0).
        self.retention = retention
        self._span_processors = tuple(span_processors)
        self._exporters = tuple(exporters)
        self._prometheus_server = prometheus_server
        self._prometheus_thread = (
            prometheus_thread  # pragma: no mutate: see _close_prometheus_server
        )
        self.prometheus_port: int | None = (
            int(prometheus_server.server_port) if prometheus_server is not None else None
        )
        self._lock = threading.Lock()
        self._shutdown_result: bool | None = None
        self._log = get_logger()
        atexit.register(self._shutdown_at_exit)

    @property
    def dropped_spans(self) -> int:
        """Spans lost since configuration: queue full, export failed or unencodable."""
        return sum(processor.dropped_spans for processor in self._span_processors)

    @property
    def span_losses(self) -> dict[str, int]:
        """``dropped_spans`` by reason (``queue_full``, ``export_failed``, ``unencodable``)."""
        totals = dict.fromkeys(DROP_REASONS, 0)
        for processor in self._span_processors:
            for reason, count in processor.losses.items():
                totals[reason] = totals.get(reason, 0) + count
        return totals

    @property
    def is_shut_down(self) -> bool:
        return self._shutdown_result is not None

    def force_flush(self, timeout_millis: int = DEFAULT_TIMEOUT_MS) -> bool:
        """Export everything buffered; True only if both signals flushed within the timeout."""
        check_timeout(timeout_millis)
        if self.is_shut_down:
            return False
        return _run_bounded(
            {
                "traces": lambda: self.tracer_provider.force_flush(timeout_millis),
                "metrics": lambda: self.meter_provider.force_flush(timeout_millis),
            },
            timeout_millis / 1000,
            self._log,
            "force_flush",
        )

    def shutdown(self, timeout_millis: int = DEFAULT_TIMEOUT_MS) -> bool:
        """Close open runs, flush and stop everything within ``timeout_millis``; idempotent.

        Order matters: the runs still open in handlers exporting here end first (as
        ``abandoned``, counted as orphans), then the traces flush, then the metrics, so the
        final metric export carries the orphan count and the spans lost on the way.

        Returns True only if every part stopped in time and no span was lost; the shutdown log
        line says the same (``clean``) with the counts. Past the deadline the exporters' retry
        back-off is aborted (their connections are left to the SDK's own shutdown, which closes
        them once the export in flight ends), so no retry outlives the deadline and the SDK is
        never handed a closed channel to print a traceback about.
        """
        check_timeout(timeout_millis)
        with self._lock:
            if self._shutdown_result is not None:
                return self._shutdown_result
            self._shutdown_result = False
        atexit.unregister(self._shutdown_at_exit)
        started = time.monotonic()
        abandoned = lifecycle.close_runs_of(
            self.tracer_provider, self.meter_provider, self.is_global
        )
        self._close_prometheus_server()

        def remaining_s() -> float:
            return max(0.0, timeout_millis / 1000 - (time.monotonic() - started))

        traces_ok = _run_bounded(
            {"traces": self._shutdown_traces}, remaining_s() * _TRACES_SHARE, self._log, "shutdown"
        )
        if not traces_ok:
            self._shutdown_exporters(SpanExporter)
        metrics_budget = remaining_s()
        metrics_ok = _run_bounded(
            # The SDK's own wait is longer than ours: its reader closes the exporter only after
            # the export in flight ends, never under it (our wait still ends at the deadline).
            {
                "metrics": lambda: self.meter_provider.shutdown(
                    timeout_millis=max(metrics_budget * 1000, _SDK_SHUTDOWN_WAIT_MS)
                )
            },
            metrics_budget,
            self._log,
            "shutdown",
            explain=explain_metrics_shutdown,
        )
        if not metrics_ok:
            self._shutdown_exporters(MetricExporter)
        losses = self.span_losses
        dropped = sum(losses.values())
        clean = traces_ok and metrics_ok and dropped == 0
        log = self._log.info if clean else self._log.warning
        elapsed_ms = round((time.monotonic() - started) * 1000, 1)  # pragma: no mutate: timing
        log(
            "symfonic_otel.telemetry_shutdown",
            clean=clean,
            dropped_spans=dropped,
            **{f"dropped_spans_{reason}": count for reason, count in losses.items()},
            abandoned_runs=abandoned,
            elapsed_ms=elapsed_ms,
        )
        with self._lock:
            self._shutdown_result = clean
        return clean

    def _shutdown_exporters(self, kind: type) -> None:
        """Past the deadline: stop the exporters' retries, never close their connections.

        Closing a channel under an export still in flight gives the SDK a closed channel to
        fail on and print about ("Channel closed!", a traceback at exit). Setting the event the
        exporter's retry back-off waits on ends the retries at once; the export in flight ends
        by its own OTLP timeout, and the SDK's shutdown, still running on its helper thread,
        closes the connection after it. An exporter without that event is left to its timeout.
        """
        for exporter in self._exporters:
            if isinstance(exporter, kind):
                for owner in (exporter, getattr(exporter, "_client", None)):
                    for name in ("_shutdown_in_progress", "_shutdown_event"):
                        event = getattr(owner, name, None)
                        if isinstance(event, threading.Event):
                            event.set()

    def _shutdown_traces(self) -> bool:
        self.tracer_provider.shutdown()
        return True

    def _close_prometheus_server(self) -> None:
        server, thread = self._prometheus_server, self._prometheus_thread
        self._prometheus_server = self._prometheus_thread = None  # pragma: no mutate: run once
        if server is None:
            return
        try:
            server.shutdown()  # stops serve_forever (within its 0.05 s poll)
            server.server_close()  # frees the port
            # The loop has ended when shutdown() returns: the join only waits out the thread's
            # last steps, and never its timeout.
            if thread is not None:  # pragma: no mutate: see above
                thread.join(timeout=1.0)  # pragma: no mutate: see above
        except Exception as exc:
            self._log.warning("symfonic_otel.prometheus_close_failed", exc_info=exc)

    def _shutdown_at_exit(self) -> None:
        self.shutdown(timeout_millis=DEFAULT_TIMEOUT_MS)

    def shutdown_on_sigterm(self, timeout_millis: int = DEFAULT_TIMEOUT_MS) -> None:
        """Opt-in: on SIGTERM, ``shutdown(timeout_millis)``, then chain to the previous handler.

        Without it SIGTERM (``docker stop``, Kubernetes) ends the process with no flush: the
        queued spans, the metrics since the last export and the open runs are lost. Call it once,
        from the main thread. The handler installed before keeps working (it is called after the
        shutdown); with none, the process still ends as SIGTERM's default would (status 143).
        """
        check_timeout(timeout_millis)
        sigterm.install(self, timeout_millis)

    def __enter__(self) -> Telemetry:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        service = self.resource.attributes.get(SERVICE_NAME)
        return (
            f"Telemetry(service_name={service!r}, prometheus_port={self.prometheus_port!r}, "
            f"shut_down={self.is_shut_down})"
        )


def explain_metrics_shutdown(exc: BaseException) -> dict[str, Any]:
    """Which metric readers failed to shut down and why, from the SDK's aggregate error.

    ``MeterProvider.shutdown`` raises a bare ``Exception`` whose lines are
    ``ReaderClass: error``. Only the class names (identifiers) and the one cause the SDK itself
    words (the budget ran out before a reader was reached) are kept: an exporter's error text
    may carry an endpoint, so it is never logged.
    """
    readers: list[str] = []
    out_of_time = True
    for line in str(exc).splitlines()[1:]:
        name, _, error = line.partition(": ")
        if _IDENTIFIER.fullmatch(name):
            readers.append(name)
            out_of_time = out_of_time and "deadline already exceeded" in error
    if not readers:
        return {"reason": "the meter provider failed to shut down its metric readers"}
    reason = (
        "the shutdown budget ran out before these readers ran: an earlier reader's final export "
        "waited on an unreachable or slow OTLP collector"
        if out_of_time
        else "these readers raised during their final collection or export"
    )
    return {"failed_readers": readers, "reason": reason}


def _run_bounded(
    calls: Mapping[str, Callable[[], object]],
    timeout_s: float,
    log: Any,
    operation: str,
    explain: Callable[[BaseException], dict[str, Any]] | None = None,
) -> bool:
    """Run ``calls`` in parallel daemon threads; True if all returned truthy before the deadline."""
    results: dict[str, bool] = {}

    def runner(name: str, call: Callable[[], object]) -> None:
        try:
            outcome = call()
            results[name] = outcome is None or bool(outcome)
        except Exception as exc:
            fields = explain(exc) if explain is not None else {}
            log.warning(f"symfonic_otel.{operation}_failed", signal=name, exc_info=exc, **fields)
            results[name] = False

    threads = [
        threading.Thread(
            target=runner, args=(name, call), name=f"symfonic-otel-{operation}-{name}", daemon=True
        )
        for name, call in calls.items()
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout_s
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    late = [name for name in calls if name not in results]
    if late:
        log.warning(
            f"symfonic_otel.{operation}_timed_out",
            signals=late,
            timeout_ms=int(timeout_s * 1000),  # pragma: no mutate: s to ms
        )
    return not late and all(results.values())


def check_timeout(timeout_millis: object) -> None:
    if (
        isinstance(timeout_millis, bool)
        or not isinstance(timeout_millis, int | float)
        or not timeout_millis >= 0
    ):
        raise ValueError(f"timeout_millis must be a number >= 0, got {timeout_millis!r}")
