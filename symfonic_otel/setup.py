"""``configure_telemetry``: one call from nothing to exported traces and metrics.

Everything an OpenTelemetry user already knows keeps working: the official OTLP exporters are
built without arguments, so they read ``OTEL_EXPORTER_OTLP_*`` (endpoint, headers, timeout,
compression, certificates, metrics temporality …) exactly as documented upstream; the resource
comes from ``Resource.create`` (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``); the SDK
providers read the sampler and batch-processor variables. This module only decides *which*
exporters exist (protocol, console, Prometheus) and makes their lifecycle safe: flush and
shutdown are bounded in time, idempotent, and never hang the application on a dead collector.
"""

from __future__ import annotations

import atexit
import inspect
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

from opentelemetry import metrics, trace
from opentelemetry.environment_variables import OTEL_METRICS_EXPORTER, OTEL_TRACES_EXPORTER
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_METRICS_PROTOCOL,
    OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)

from symfonic_otel import lifecycle, semconv
from symfonic_otel.budget import cardinality_view
from symfonic_otel.logs import FailureLog, get_logger
from symfonic_otel.span_export import DROP_REASONS, DropCountingBatchSpanProcessor

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from opentelemetry.sdk.trace import SpanProcessor

__all__ = ["OtlpProtocol", "Telemetry", "configure_telemetry"]

OtlpProtocol = Literal["grpc", "http/protobuf"]
_PROTOCOLS: Final[tuple[str, ...]] = get_args(OtlpProtocol)
_DEFAULT_PROTOCOL: Final[OtlpProtocol] = "grpc"  # the OTLP exporter spec's default
_DEFAULT_TIMEOUT_MS: Final = 10_000
_KNOWN_EXPORTER_NAMES: Final = frozenset({"otlp", "console", "none"})
# Share of the shutdown budget the traces may use before the metrics get the rest: the metrics
# flush last so that the spans lost during the final trace export are counted in it.
_TRACES_SHARE: Final = 0.6


# --- the returned handle --------------------------------------------------------------------------


class Telemetry:
    """What ``configure_telemetry`` built: providers plus a safe lifecycle.

    ``force_flush`` and ``shutdown`` run the SDK calls on a helper thread and stop waiting at the
    deadline, because the SDK's own calls can block far longer than asked (a hung collector holds
    an export for the whole OTLP timeout, retries included). ``shutdown`` is idempotent, also runs
    at interpreter exit, and always closes the Prometheus HTTP server. Use it as a context
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
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.resource = resource
        self.is_global = is_global
        self._span_processors = tuple(span_processors)
        self._exporters = tuple(exporters)
        self._prometheus_server = prometheus_server
        self._prometheus_thread = prometheus_thread
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

    def force_flush(self, timeout_millis: int = _DEFAULT_TIMEOUT_MS) -> bool:
        """Export everything buffered; True only if both signals flushed within the timeout."""
        _check_timeout(timeout_millis)
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

    def shutdown(self, timeout_millis: int = _DEFAULT_TIMEOUT_MS) -> bool:
        """Close open runs, flush and stop everything within ``timeout_millis``; idempotent.

        Order matters: the runs still open in handlers exporting here end first (as
        ``abandoned``, counted as orphans), then the traces flush, then the metrics, so the
        final metric export carries the orphan count and the spans lost on the way.

        Returns True only if every part stopped in time and no span was lost; the shutdown log
        line says the same (``clean``) with the counts. Past the deadline the exporters are shut
        down directly, which aborts their retry back-off and closes their connections, so the
        helper threads left behind finish promptly instead of lingering for the OTLP timeout.
        """
        _check_timeout(timeout_millis)
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
            {"metrics": lambda: self.meter_provider.shutdown(timeout_millis=metrics_budget * 1000)},
            metrics_budget,
            self._log,
            "shutdown",
        )
        if not metrics_ok:
            self._shutdown_exporters(MetricExporter)
        losses = self.span_losses
        dropped = sum(losses.values())
        clean = traces_ok and metrics_ok and dropped == 0
        log = self._log.info if clean else self._log.warning
        log(
            "symfonic_otel.telemetry_shutdown",
            clean=clean,
            dropped_spans=dropped,
            **{f"dropped_spans_{reason}": count for reason, count in losses.items()},
            abandoned_runs=abandoned,
            elapsed_ms=round((time.monotonic() - started) * 1000, 1),
        )
        with self._lock:
            self._shutdown_result = clean
        return clean

    def _shutdown_exporters(self, kind: type) -> None:
        for exporter in self._exporters:
            if isinstance(exporter, kind):
                try:
                    exporter.shutdown()
                except Exception:  # best effort after the deadline
                    continue

    def _shutdown_traces(self) -> bool:
        self.tracer_provider.shutdown()
        return True

    def _close_prometheus_server(self) -> None:
        server, thread = self._prometheus_server, self._prometheus_thread
        self._prometheus_server = self._prometheus_thread = None
        if server is None:
            return
        try:
            server.shutdown()  # stops serve_forever (polls every 0.5 s)
            server.server_close()  # frees the port
            if thread is not None:
                thread.join(timeout=1.0)
        except Exception as exc:
            self._log.warning("symfonic_otel.prometheus_close_failed", exc_info=exc)

    def _shutdown_at_exit(self) -> None:
        self.shutdown(timeout_millis=_DEFAULT_TIMEOUT_MS)

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


def _run_bounded(
    calls: Mapping[str, Callable[[], object]], timeout_s: float, log: Any, operation: str
) -> bool:
    """Run ``calls`` in parallel daemon threads; True if all returned truthy before the deadline."""
    results: dict[str, bool] = {}

    def runner(name: str, call: Callable[[], object]) -> None:
        try:
            outcome = call()
            results[name] = outcome is None or bool(outcome)
        except Exception as exc:
            log.warning(f"symfonic_otel.{operation}_failed", signal=name, exc_info=exc)
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
            timeout_ms=int(timeout_s * 1000),
        )
    return not late and all(results.values())


# --- configuration --------------------------------------------------------------------------------


def configure_telemetry(
    *,
    service_name: str | None = None,
    resource_attributes: Mapping[str, str] | None = None,
    otlp: bool | None = None,
    otlp_protocol: OtlpProtocol | None = None,
    console: bool = False,
    prometheus_port: int | None = None,
    prometheus_host: str = "127.0.0.1",
    set_global: bool = True,
    export_interval_ms: int | None = None,
    span_processors: Sequence[SpanProcessor] = (),
    metric_readers: Sequence[MetricReader] = (),
) -> Telemetry:
    """Build SDK tracer and meter providers with exporters, and return a ``Telemetry`` handle.

    * ``service_name`` / ``resource_attributes``: merged over what ``Resource.create`` reads from
      ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME`` (explicit arguments win, as
      everywhere in the SDK).
    * ``otlp``: ``None`` follows ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` (default
      ``otlp``; ``none`` disables, ``console`` adds console output); ``True`` / ``False`` force it.
      Endpoint, headers, timeout, compression, TLS and metrics temporality come from the standard
      ``OTEL_EXPORTER_OTLP_*`` variables, read by the official exporters themselves.
    * ``otlp_protocol``: overrides ``OTEL_EXPORTER_OTLP_{TRACES,METRICS}_PROTOCOL`` /
      ``OTEL_EXPORTER_OTLP_PROTOCOL`` (default ``grpc``).
    * ``console``: also print spans and metrics to stdout (development).
    * ``prometheus_port``: serve a Prometheus scrape endpoint on ``prometheus_host`` (loopback by
      default: exposing metrics beyond the host is a deliberate choice); ``0`` picks a free port,
      readable from ``Telemetry.prometheus_port``.
    * ``set_global``: install the providers as the OpenTelemetry globals, so
      ``OTelCallbackHandler()`` and other instrumentations pick them up.
    * ``export_interval_ms``: push interval of the periodic metric readers (default
      ``OTEL_METRIC_EXPORT_INTERVAL``, 60 s).
    * ``span_processors`` / ``metric_readers``: extra SDK components to add.
    """
    _validate(
        service_name=service_name,
        resource_attributes=resource_attributes,
        otlp=otlp,
        otlp_protocol=otlp_protocol,
        console=console,
        prometheus_port=prometheus_port,
        prometheus_host=prometheus_host,
        set_global=set_global,
        export_interval_ms=export_interval_ms,
    )
    log = get_logger()
    failures = FailureLog()

    attributes: dict[str, str] = dict(resource_attributes or {})
    if service_name is not None:
        attributes[SERVICE_NAME] = service_name.strip()
    resource = Resource.create(attributes)

    traces_selected = _selected_exporters(OTEL_TRACES_EXPORTER, log)
    metrics_selected = _selected_exporters(OTEL_METRICS_EXPORTER, log)
    traces_otlp = otlp if otlp is not None else "otlp" in traces_selected
    metrics_otlp = otlp if otlp is not None else "otlp" in metrics_selected
    traces_console = console or (otlp is None and "console" in traces_selected)
    metrics_console = console or (otlp is None and "console" in metrics_selected)
    traces_protocol = _protocol(OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, otlp_protocol)
    metrics_protocol = _protocol(OTEL_EXPORTER_OTLP_METRICS_PROTOCOL, otlp_protocol)

    exporters: list[SpanExporter | MetricExporter] = []
    batch_processors: list[DropCountingBatchSpanProcessor] = []
    readers: list[MetricReader] = []
    prometheus_server: WSGIServer | None = None
    prometheus_thread: threading.Thread | None = None

    tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    if traces_otlp:
        span_exporter = _otlp_span_exporter(traces_protocol)
        exporters.append(span_exporter)
        processor = DropCountingBatchSpanProcessor(span_exporter, failures=failures)
        batch_processors.append(processor)
        tracer_provider.add_span_processor(processor)
    if traces_console:
        # Synchronous on purpose: development output should appear in event order. ``out`` is
        # passed so a stdout redirected before this call is honoured (the SDK default binds the
        # stream at import time).
        tracer_provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stdout)))
    for extra in span_processors:
        tracer_provider.add_span_processor(extra)

    if metrics_otlp:
        metric_exporter = _otlp_metric_exporter(metrics_protocol)
        exporters.append(metric_exporter)
        readers.append(
            PeriodicExportingMetricReader(
                metric_exporter, export_interval_millis=export_interval_ms
            )
        )
    if metrics_console:
        readers.append(
            PeriodicExportingMetricReader(
                ConsoleMetricExporter(), export_interval_millis=export_interval_ms
            )
        )
    if prometheus_port is not None:
        prometheus_reader, prometheus_server, prometheus_thread = _start_prometheus(
            prometheus_host, prometheus_port
        )
        readers.append(prometheus_reader)
    readers.extend(metric_readers)

    try:
        # This package's instruments get a cardinality limit above the handlers' own series
        # budgets, so no tenant ever lands in the SDK's unlabelled overflow series.
        meter_provider = MeterProvider(
            resource=resource,
            metric_readers=readers,
            shutdown_on_exit=False,
            views=[cardinality_view()],
        )
    except Exception:
        if prometheus_server is not None:
            prometheus_server.shutdown()
            prometheus_server.server_close()
        raise

    is_global = False
    if set_global:
        trace.set_tracer_provider(tracer_provider)
        metrics.set_meter_provider(meter_provider)
        is_global = (
            trace.get_tracer_provider() is tracer_provider
            and metrics.get_meter_provider() is meter_provider
        )
        if not is_global:
            log.warning(
                "symfonic_otel.global_providers_already_set",
                hint="OpenTelemetry allows setting the global providers once per process; "
                "pass telemetry.tracer_provider / meter_provider to handlers explicitly",
            )

    _observe_span_losses(meter_provider, batch_processors)
    telemetry = Telemetry(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        resource=resource,
        span_processors=batch_processors,
        exporters=exporters,
        prometheus_server=prometheus_server,
        prometheus_thread=prometheus_thread,
        is_global=is_global,
    )
    # Endpoints and headers are deliberately not logged: URLs can carry credentials and
    # OTEL_EXPORTER_OTLP_HEADERS usually does.
    log.info(
        "symfonic_otel.telemetry_configured",
        service_name=resource.attributes.get(SERVICE_NAME),
        traces_otlp=traces_protocol if traces_otlp else None,
        metrics_otlp=metrics_protocol if metrics_otlp else None,
        console=traces_console or metrics_console,
        prometheus=(
            f"{prometheus_host}:{telemetry.prometheus_port}"
            if telemetry.prometheus_port is not None
            else None
        ),
        is_global=is_global,
    )
    return telemetry


def _observe_span_losses(
    meter_provider: MeterProvider, processors: Sequence[DropCountingBatchSpanProcessor]
) -> None:
    """``symfonic.telemetry.dropped_spans``: read from the processors at each collection.

    An observable counter costs nothing on the paths that lose spans (one of them is the agent's
    thread when the queue is full), and every reason is reported, at zero too, so ``rate()``
    sees the first loss.
    """
    held = tuple(weakref.ref(processor) for processor in processors)

    def observe(options: CallbackOptions) -> Iterable[Observation]:
        totals = dict.fromkeys(DROP_REASONS, 0)
        for ref in held:
            processor = ref()
            if processor is not None:
                for reason, count in processor.losses.items():
                    totals[reason] += count
        return [
            Observation(count, {semconv.TELEMETRY_DROP_REASON: reason})
            for reason, count in totals.items()
        ]

    spec = semconv.DROPPED_SPANS
    meter_provider.get_meter(semconv.METER_NAME).create_observable_counter(
        spec.name, callbacks=[observe], unit=spec.unit, description=spec.description
    )


def _validate(
    *,
    service_name: object,
    resource_attributes: object,
    otlp: object,
    otlp_protocol: object,
    console: object,
    prometheus_port: object,
    prometheus_host: object,
    set_global: object,
    export_interval_ms: object,
) -> None:
    """Reject bad arguments up front, each message naming the argument at fault."""
    if service_name is not None and (not isinstance(service_name, str) or not service_name.strip()):
        raise ValueError(f"service_name must be a non-empty str or None, got {service_name!r}")
    if resource_attributes is not None:
        if not isinstance(resource_attributes, Mapping):
            raise TypeError(
                f"resource_attributes must be a mapping of str to str, got {resource_attributes!r}"
            )
        for key, value in resource_attributes.items():
            if not isinstance(key, str) or not key or not isinstance(value, str):
                raise TypeError(
                    "resource_attributes must map non-empty str keys to str values, "
                    f"got {key!r}: {value!r}"
                )
    for name, flag in (("console", console), ("set_global", set_global)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {flag!r}")
    if otlp is not None and not isinstance(otlp, bool):
        raise TypeError(f"otlp must be a bool or None, got {otlp!r}")
    if otlp_protocol is not None and otlp_protocol not in _PROTOCOLS:
        raise ValueError(
            f"otlp_protocol must be one of {', '.join(map(repr, _PROTOCOLS))} or None, "
            f"got {otlp_protocol!r}"
        )
    if prometheus_port is not None and (
        isinstance(prometheus_port, bool)
        or not isinstance(prometheus_port, int)
        or not 0 <= prometheus_port <= 65535
    ):
        raise ValueError(
            "prometheus_port must be an int between 0 and 65535 (0 picks a free port) or None, "
            f"got {prometheus_port!r}"
        )
    if not isinstance(prometheus_host, str) or not prometheus_host.strip():
        raise ValueError(f"prometheus_host must be a non-empty str, got {prometheus_host!r}")
    if export_interval_ms is not None and (
        isinstance(export_interval_ms, bool)
        or not isinstance(export_interval_ms, int)
        or export_interval_ms <= 0
    ):
        raise ValueError(
            f"export_interval_ms must be a positive int or None, got {export_interval_ms!r}"
        )


def _check_timeout(timeout_millis: object) -> None:
    if (
        isinstance(timeout_millis, bool)
        or not isinstance(timeout_millis, int | float)
        or not timeout_millis >= 0
    ):
        raise ValueError(f"timeout_millis must be a number >= 0, got {timeout_millis!r}")


def _selected_exporters(variable: str, log: Any) -> frozenset[str]:
    """The exporter names of ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` (default otlp)."""
    raw = os.environ.get(variable, "").strip()
    names = frozenset(part.strip().lower() for part in raw.split(",") if part.strip())
    if not names:
        return frozenset({"otlp"})
    unknown = sorted(names - _KNOWN_EXPORTER_NAMES)
    if unknown:
        log.warning(
            "symfonic_otel.unsupported_exporter_names",
            variable=variable,
            ignored=unknown,
            supported=sorted(_KNOWN_EXPORTER_NAMES),
        )
    return names


def _protocol(signal_variable: str, explicit: OtlpProtocol | None) -> OtlpProtocol:
    """Signal-specific protocol variable, then the general one, then the spec default."""
    if explicit is not None:
        return explicit
    for variable in (signal_variable, OTEL_EXPORTER_OTLP_PROTOCOL):
        raw = os.environ.get(variable, "").strip().lower()
        if not raw:
            continue
        if raw == "grpc":
            return "grpc"
        if raw == "http/protobuf":
            return "http/protobuf"
        raise ValueError(
            f"{variable}={raw!r} is not supported; use one of {', '.join(map(repr, _PROTOCOLS))}"
        )
    return _DEFAULT_PROTOCOL


def _otlp_span_exporter(protocol: OtlpProtocol) -> SpanExporter:
    # Imported per protocol so an installation without grpcio still works over HTTP.
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpOTLPSpanExporter,
    )

    return HttpOTLPSpanExporter()


def _otlp_metric_exporter(protocol: OtlpProtocol) -> MetricExporter:
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

        return OTLPMetricExporter()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HttpOTLPMetricExporter,
    )

    return HttpOTLPMetricExporter()


def _start_prometheus(host: str, port: int) -> tuple[MetricReader, WSGIServer, threading.Thread]:
    """A Prometheus reader on its own registry, served by prometheus_client's HTTP server.

    A dedicated ``CollectorRegistry`` keeps two configurations in one process (tests, or an app
    that reconfigures) from colliding on the global registry, and the scrape shows only this
    package's SDK metrics. Older readers without a ``registry`` argument use the default one.
    """
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import REGISTRY, CollectorRegistry, start_http_server

    if "registry" in inspect.signature(PrometheusMetricReader).parameters:
        registry = CollectorRegistry(auto_describe=True)
        reader = PrometheusMetricReader(registry=registry)
    else:  # pragma: no cover - exporter releases before the registry argument
        registry = REGISTRY
        reader = PrometheusMetricReader()
    try:
        started = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        reader.shutdown()
        raise ValueError(
            f"prometheus_port {port} on prometheus_host {host!r} cannot be bound: {exc}"
        ) from exc
    if not isinstance(started, tuple):  # pragma: no cover - prometheus_client < 0.17
        reader.shutdown()
        raise RuntimeError("prometheus_client >= 0.17 is required to close the metrics server")
    server, thread = started
    return reader, server, thread
