"""Which exporters exist, built the way OpenTelemetry users expect.

The official OTLP exporters are built without arguments, so they read ``OTEL_EXPORTER_OTLP_*``
themselves; the protocol comes from the signal-specific variable, then the general one, then the
spec default. The OTLP metric exporter splits each export into bounded messages. The
dropped-spans counter is observed from the span processors at each collection.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterable, Sequence
from typing import Final, Literal, get_args

from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_PROTOCOL,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter
from opentelemetry.sdk.trace.export import SpanExporter

from symfonic_otel import semconv
from symfonic_otel.environment import bad_setting, read_choice
from symfonic_otel.export.span_export import DROP_REASONS, DropCountingBatchSpanProcessor

OtlpProtocol = Literal["grpc", "http/protobuf"]
PROTOCOLS: Final[tuple[str, ...]] = get_args(OtlpProtocol)
_DEFAULT_PROTOCOL: Final[OtlpProtocol] = "grpc"  # the OTLP exporter spec's default
_KNOWN_EXPORTER_NAMES: Final = frozenset({"otlp", "console", "none"})
# Data points per OTLP metric message. Measured on the handler's series (benchmarks/tenants.py):
# 230-260 bytes per point on average, 660 bytes for the largest (a histogram with four exemplars);
# a histogram with an exemplar in each of its 15 buckets and 64-character labels stays under
# 1.3 KB. 2,000 points make messages of about 0.5 MB, 2.6 MB at that theoretical worst: under
# the 4 MiB a collector accepts over gRPC by default, with room for larger label values.
DEFAULT_OTLP_METRIC_BATCH: Final = 2_000


def selected_exporters(variable: str) -> frozenset[str] | None:
    """The exporter names of ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER``.

    ``None`` when the variable is unset or names no exporter this package knows: the default
    rule applies then (a value naming none is warned about). Unknown names beside known ones
    are warned about and ignored.
    """
    raw = os.environ.get(variable, "").strip()
    names = frozenset(part.strip().lower() for part in raw.split(",") if part.strip())
    if not names:
        return None
    known = names & _KNOWN_EXPORTER_NAMES
    if names - known:
        expected = "a list of " + ", ".join(map(repr, sorted(_KNOWN_EXPORTER_NAMES)))
        instead = (
            ", ".join(sorted(known)) + " (the other names ignored)"
            if known
            else "the default exporters"
        )
        bad_setting(variable, raw, expected, instead)
    return known or None


def protocol_for(signal_variable: str, explicit: OtlpProtocol | None) -> OtlpProtocol:
    """Signal-specific protocol variable, then the general one, then the spec default.

    A value that is no supported protocol is warned about and skipped, as if unset.
    """
    if explicit is not None:
        return explicit
    for variable, instead in (
        (signal_variable, f"{OTEL_EXPORTER_OTLP_PROTOCOL} or the default, 'grpc'"),
        (OTEL_EXPORTER_OTLP_PROTOCOL, "the default, 'grpc'"),
    ):
        chosen = read_choice(variable, PROTOCOLS, "", instead=instead)
        if chosen == "grpc":
            return "grpc"
        if chosen == "http/protobuf":
            return "http/protobuf"
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


def otlp_metric_exporter(
    protocol: OtlpProtocol, batch_size: int = DEFAULT_OTLP_METRIC_BATCH
) -> MetricExporter:
    """The official OTLP metric exporter, splitting each export into ``batch_size`` points.

    Without a batch size the SDK sends one message per collection, whatever its size: past a few
    hundred tenants it exceeds a collector's 4 MiB gRPC receive limit and every point is lost.
    The SDK's own splitting (``max_export_batch_size``) keeps each message bounded.
    The temporality preference is the exporter's own (``OTEL_EXPORTER_OTLP_METRICS_*``); the
    per-tenant counters follow what it asks of a counter (see ``emit.tenant_points``).
    """
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

        return OTLPMetricExporter(max_export_batch_size=batch_size)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HttpOTLPMetricExporter,
    )

    return HttpOTLPMetricExporter(max_export_batch_size=batch_size)


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
