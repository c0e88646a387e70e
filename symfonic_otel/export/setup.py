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

import sys
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

from opentelemetry import metrics, trace
from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_METRICS_PROTOCOL,
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

from symfonic_otel.emit import tenant_hub
from symfonic_otel.emit.budget import cardinality_view
from symfonic_otel.environment import substituted
from symfonic_otel.export.exporters import (
    DEFAULT_OTLP_METRIC_BATCH,
    PROTOCOLS,
    OtlpProtocol,
    observe_span_losses,
    otlp_metric_exporter,
    otlp_span_exporter,
    protocol_for,
)
from symfonic_otel.export.handle import Telemetry
from symfonic_otel.export.prometheus import PrometheusEndpoint, start_prometheus
from symfonic_otel.export.sdk_settings import settings_for
from symfonic_otel.export.selection import choose_exporters
from symfonic_otel.export.span_export import DropCountingBatchSpanProcessor
from symfonic_otel.logs import FailureLog, get_logger

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from opentelemetry.sdk.trace import SpanProcessor

__all__ = ["OtlpProtocol", "Telemetry", "configure_telemetry"]


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
    otlp_metric_batch_size: int = DEFAULT_OTLP_METRIC_BATCH,
    span_processors: Sequence[SpanProcessor] = (),
    metric_readers: Sequence[MetricReader] = (),
) -> Telemetry:
    """Build SDK tracer and meter providers with exporters, and return a ``Telemetry`` handle.

    * ``service_name`` / ``resource_attributes``: merged over what ``Resource.create`` reads from
      ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME`` (explicit arguments win, as
      everywhere in the SDK).
    * ``otlp``: ``None`` follows ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` (``none``
      disables, ``console`` adds console output); unset, OTLP is on, except that with
      ``prometheus_port`` metrics are only scraped and traces go over OTLP only if an OTLP
      endpoint variable is set (see ``export.selection``). ``True`` / ``False`` force it.
      Endpoint, headers, timeout, compression, TLS and metrics temporality come from the standard
      ``OTEL_EXPORTER_OTLP_*`` variables, read by the official exporters themselves; under the
      ``delta`` preference the per-tenant counters send true deltas, only for series that
      changed in the interval.
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
    * ``otlp_metric_batch_size``: most data points in one OTLP metric message (default 2,000,
      about 0.5 MB), so no message exceeds a collector's 4 MiB gRPC receive limit at any tenant
      count; OpenTelemetry defines no environment variable for it.
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
        otlp_metric_batch_size=otlp_metric_batch_size,
    )
    _validate_components(span_processors, metric_readers)
    log = get_logger()
    failures = FailureLog()

    attributes: dict[str, str] = dict(resource_attributes or {})
    if service_name is not None:
        attributes[SERVICE_NAME] = service_name.strip()
    resource = Resource.create(attributes)

    choice = choose_exporters(
        otlp=otlp, console=console, prometheus=prometheus_port is not None, log=log
    )
    traces_otlp, traces_console = choice.traces_otlp, choice.traces_console
    metrics_otlp, metrics_console = choice.metrics_otlp, choice.metrics_console
    # A variable is read (and a bad value warned about) only when what reads it is built.
    traces_protocol = (
        protocol_for(OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, otlp_protocol) if traces_otlp else None
    )
    metrics_protocol = (
        protocol_for(OTEL_EXPORTER_OTLP_METRICS_PROTOCOL, otlp_protocol) if metrics_otlp else None
    )
    settings = settings_for(
        otlp=traces_otlp or metrics_otlp,
        periodic=metrics_otlp or metrics_console,
        batch_spans=traces_otlp,
    )

    exporters: list[SpanExporter | MetricExporter] = []
    batch_processors: list[DropCountingBatchSpanProcessor] = []
    readers: list[MetricReader] = []
    prometheus_server: WSGIServer | None = None
    prometheus_endpoint: PrometheusEndpoint | None = None
    prometheus_thread: threading.Thread | None = None

    # The SDK components read their own variables as they are built: a bad value gets one
    # warning naming it and the default, never an exception from deep inside the SDK.
    with substituted(settings):
        tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        if traces_protocol is not None:
            span_exporter = otlp_span_exporter(traces_protocol)
            exporters.append(span_exporter)
            processor = DropCountingBatchSpanProcessor(span_exporter, failures=failures)
            batch_processors.append(processor)
            tracer_provider.add_span_processor(processor)
        if traces_console:
            # Synchronous on purpose: development output should appear in event order. ``out`` is
            # passed so a stdout redirected before this call is honoured (the SDK default binds the
            # stream at import time).
            tracer_provider.add_span_processor(
                SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stdout))
            )
        for extra in span_processors:
            tracer_provider.add_span_processor(extra)

        if metrics_protocol is not None:
            metric_exporter = otlp_metric_exporter(metrics_protocol, otlp_metric_batch_size)
            exporters.append(metric_exporter)
            readers.append(
                PeriodicExportingMetricReader(
                    metric_exporter, export_interval_millis=export_interval_ms
                )
            )
        if metrics_console:
            readers.append(
                PeriodicExportingMetricReader(
                    ConsoleMetricExporter(out=sys.stdout), export_interval_millis=export_interval_ms
                )
            )
        if prometheus_port is not None:
            prometheus_reader, prometheus_endpoint, prometheus_server, prometheus_thread = (
                start_prometheus(prometheus_host, prometheus_port)
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
            hint = (
                "OpenTelemetry allows setting the global providers once per process; "
                "pass telemetry.tracer_provider / meter_provider to handlers explicitly"
            )
            log.warning("symfonic_otel.global_providers_already_set", hint=hint)
            # A programming mistake the caller must see (the log may go nowhere): a warning
            # at the caller's line, beside the SDK's terse "Overriding ... is not allowed".
            warnings.warn(
                "configure_telemetry(): the OpenTelemetry global providers were already set "
                "(an earlier configure_telemetry or another SDK setup), so this configuration "
                "is NOT global: handlers built without providers keep using the first one. "
                "Configure once per process, or pass set_global=False and give "
                "telemetry.tracer_provider / meter_provider to the handlers.",
                RuntimeWarning,
                stacklevel=2,
            )

    if is_global:
        tenant_hub.adopt_pending()  # handlers built before this call report from the start
    if prometheus_endpoint is not None:
        prometheus_endpoint.bind(tenant_hub.hub_for(meter_provider))
    observe_span_losses(meter_provider, batch_processors)
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
        traces_otlp=traces_protocol,
        metrics_otlp=metrics_protocol,
        console=traces_console or metrics_console,
        prometheus=(
            f"{prometheus_host}:{telemetry.prometheus_port}"
            if telemetry.prometheus_port is not None
            else None
        ),
        is_global=is_global,
    )
    return telemetry


_SPAN_PROCESSOR_METHODS: Final = ("on_start", "on_end", "shutdown", "force_flush")


def _validate_components(span_processors: object, metric_readers: object) -> None:
    """The extra SDK components: checked here, not at the first span or collection."""
    if isinstance(span_processors, str | bytes) or not isinstance(span_processors, Sequence):
        raise TypeError(
            f"span_processors must be a sequence of span processors, got {span_processors!r}"
        )
    for index, processor in enumerate(span_processors):
        missing = [m for m in _SPAN_PROCESSOR_METHODS if not callable(getattr(processor, m, None))]
        if missing:
            raise TypeError(
                f"span_processors[{index}] must be a span processor (on_start, on_end, "
                f"shutdown, force_flush), got {processor!r}"
            )
    if isinstance(metric_readers, str | bytes) or not isinstance(metric_readers, Sequence):
        raise TypeError(
            f"metric_readers must be a sequence of MetricReader, got {metric_readers!r}"
        )
    for index, reader in enumerate(metric_readers):
        if not isinstance(reader, MetricReader):
            raise TypeError(f"metric_readers[{index}] must be a MetricReader, got {reader!r}")
    if len({id(reader) for reader in metric_readers}) != len(metric_readers):
        raise ValueError("metric_readers must not hold the same reader twice")


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
    otlp_metric_batch_size: object,
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
    if otlp_protocol is not None and otlp_protocol not in PROTOCOLS:
        raise ValueError(
            f"otlp_protocol must be one of {', '.join(map(repr, PROTOCOLS))} or None, "
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
    if (
        isinstance(otlp_metric_batch_size, bool)
        or not isinstance(otlp_metric_batch_size, int)
        or otlp_metric_batch_size <= 0
    ):
        raise ValueError(
            "otlp_metric_batch_size must be a positive int (data points per OTLP message), "
            f"got {otlp_metric_batch_size!r}"
        )
