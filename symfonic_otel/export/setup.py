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

import os
import sys
import threading
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from opentelemetry import metrics, trace
from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_METRICS_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    OTEL_METRICS_EXEMPLAR_FILTER,
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
from symfonic_otel.export.arguments import validate_arguments, validate_components
from symfonic_otel.export.exporters import (
    DEFAULT_OTLP_METRIC_BATCH,
    OtlpProtocol,
    observe_span_losses,
    otlp_metric_exporter,
    otlp_span_exporter,
    protocol_for,
)
from symfonic_otel.export.handle import Telemetry
from symfonic_otel.export.prometheus import PrometheusEndpoint, start_prometheus
from symfonic_otel.export.retention import OutcomeRetentionSpanProcessor
from symfonic_otel.export.retention_rules import ratio_from_env
from symfonic_otel.export.sdk_settings import settings_for
from symfonic_otel.export.selection import choose_exporters
from symfonic_otel.export.span_export import DropCountingBatchSpanProcessor
from symfonic_otel.export.trace_exemplars import KeptTraceExemplarFilter, exports_spans
from symfonic_otel.logs import get_logger

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
    healthy_trace_ratio: float | None = None,
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
    * ``healthy_trace_ratio``: below 1.0, the OTLP trace export holds each trace until its
      local root span ends and exports every failing run whole (bailed, errored, cancelled,
      abandoned, synthesis fallback, loop, fabrication) and healthy runs with this probability,
      decided from the trace id (``OutcomeRetentionSpanProcessor``). Default
      ``SYMFONIC_OTEL_HEALTHY_TRACE_RATIO``, else 1.0: every trace, nothing held.

    Exemplars only name exported traces: with no span processor that exports, none carries a
    trace id (logged once); under retention, only the traces it keeps.
    """
    validate_arguments(
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
    validate_components(span_processors, metric_readers)
    log = get_logger()
    ratio = ratio_from_env(healthy_trace_ratio)

    attributes: dict[str, str] = dict(resource_attributes or {})
    if service_name is not None:
        attributes[SERVICE_NAME] = service_name.strip()
    resource = Resource.create(attributes)

    choice = choose_exporters(otlp=otlp, console=console, prometheus=prometheus_port is not None)
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
        tracer_provider = TracerProvider(
            resource=resource,
            shutdown_on_exit=False,  # pragma: no mutate: the handle's exit hook runs first
        )
        held: DropCountingBatchSpanProcessor | None = None  # exported through retention
        if traces_protocol is not None:
            span_exporter = otlp_span_exporter(traces_protocol)
            exporters.append(span_exporter)
            processor = DropCountingBatchSpanProcessor(span_exporter)
            batch_processors.append(processor)
            if ratio < 1.0:
                held = processor  # added behind retention, after the extra processors
            else:
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

        kept_traces = KeptTraceExemplarFilter(tracer_provider)
        try:
            # This package's instruments get a cardinality limit above the handlers' own series
            # budgets, so no tenant ever lands in the SDK's unlabelled overflow series.
            meter_provider = MeterProvider(
                resource=resource,
                metric_readers=readers,
                shutdown_on_exit=False,  # pragma: no mutate: the handle's exit hook runs first
                views=[cardinality_view()],
                exemplar_filter=kept_traces if _default_exemplar_filter() else None,
            )
        except Exception:
            if prometheus_server is not None:
                prometheus_server.shutdown()
                prometheus_server.server_close()
            raise

    retention = None
    if held is not None:
        retention = OutcomeRetentionSpanProcessor(
            held, healthy_trace_ratio=ratio, meter_provider=meter_provider
        )
        tracer_provider.add_span_processor(retention)
    elif ratio < 1.0:
        log.info(
            "symfonic_otel.healthy_trace_ratio_unused",
            healthy_trace_ratio=ratio,
            reason="outcome retention applies to the OTLP trace export, and none is configured",
        )
    if not exports_spans(tracer_provider):
        log.info(
            "symfonic_otel.exemplars_without_trace_ids",
            reason="no trace exporter is configured, so no run's trace is stored: exemplars "
            "carry no trace ids until a span processor that exports is added (set "
            "OTEL_EXPORTER_OTLP_ENDPOINT, or pass span_processors)",
        )

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
    tenant_hub.hub_for(meter_provider).trace_filter = kept_traces.links
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
        retention=retention,
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
        healthy_trace_ratio=ratio,
    )
    return telemetry


def _default_exemplar_filter() -> bool:
    """Whether the SDK would pick its trace-based exemplar filter (``OTEL_METRICS_EXEMPLAR_FILTER``
    unset or ``trace_based``); an explicit ``always_on`` / ``always_off`` is left to the SDK."""
    raw = os.environ.get(OTEL_METRICS_EXEMPLAR_FILTER, "").strip().lower()
    return raw in {"", "trace_based"}
