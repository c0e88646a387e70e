"""Which exporters exist, built the way OpenTelemetry users expect.

The official OTLP exporters are built without arguments, so they read ``OTEL_EXPORTER_OTLP_*``
themselves; the protocol comes from the signal-specific variable, then the general one, then the
spec default. The Prometheus endpoint gets a registry of its own. The dropped-spans counter is
observed from the span processors at each collection.
"""

from __future__ import annotations

import inspect
import os
import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.environment_variables import OTEL_EXPORTER_OTLP_PROTOCOL
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, MetricReader
from opentelemetry.sdk.trace.export import SpanExporter

from symfonic_otel import semconv
from symfonic_otel.export.span_export import DROP_REASONS, DropCountingBatchSpanProcessor

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

OtlpProtocol = Literal["grpc", "http/protobuf"]
PROTOCOLS: Final[tuple[str, ...]] = get_args(OtlpProtocol)
_DEFAULT_PROTOCOL: Final[OtlpProtocol] = "grpc"  # the OTLP exporter spec's default
_KNOWN_EXPORTER_NAMES: Final = frozenset({"otlp", "console", "none"})


def selected_exporters(variable: str, log: Any) -> frozenset[str]:
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


def protocol_for(signal_variable: str, explicit: OtlpProtocol | None) -> OtlpProtocol:
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
            f"{variable}={raw!r} is not supported; use one of {', '.join(map(repr, PROTOCOLS))}"
        )
    return _DEFAULT_PROTOCOL


def otlp_span_exporter(protocol: OtlpProtocol) -> SpanExporter:
    # Imported per protocol so an installation without grpcio still works over HTTP.
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpOTLPSpanExporter,
    )

    return HttpOTLPSpanExporter()


def otlp_metric_exporter(protocol: OtlpProtocol) -> MetricExporter:
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

        return OTLPMetricExporter()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HttpOTLPMetricExporter,
    )

    return HttpOTLPMetricExporter()


def start_prometheus(host: str, port: int) -> tuple[MetricReader, WSGIServer, threading.Thread]:
    """A Prometheus reader on its own registry, served by prometheus_client's HTTP server.

    A dedicated ``CollectorRegistry`` keeps two configurations in one process (tests, or an app
    that reconfigures) from colliding on the global registry, and the scrape shows only this
    package's SDK metrics. The served registry adds the histograms' exemplars to the reader's
    families (see ``exemplars``): a scraper asking for OpenMetrics gets them. Older readers
    without a ``registry`` argument use the default registry, without exemplars.
    """
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import REGISTRY, CollectorRegistry, start_http_server

    from symfonic_otel.emit.exemplars import ExemplarCollector, ExemplarReader

    reader: PrometheusMetricReader
    if "registry" in inspect.signature(PrometheusMetricReader).parameters:
        families = CollectorRegistry(auto_describe=True)
        reader = ExemplarReader(families)
        registry = CollectorRegistry()
        registry.register(ExemplarCollector(families, reader))
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


def observe_span_losses(
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
    meter_provider.get_meter(semconv.SCOPE_NAME).create_observable_counter(
        spec.name, callbacks=[observe], unit=spec.unit, description=spec.description
    )
