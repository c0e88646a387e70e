"""configure_telemetry's arguments, checked before anything is built.

Each message names the argument at fault, so a typo fails at start-up with the fix in the
message, not at the first span or collection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from opentelemetry.sdk.metrics.export import MetricReader

from symfonic_otel.export.exporters import PROTOCOLS

__all__ = ["validate_arguments", "validate_components"]

_SPAN_PROCESSOR_METHODS: Final = ("on_start", "on_end", "shutdown", "force_flush")


def validate_components(span_processors: object, metric_readers: object) -> None:
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


def validate_arguments(
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
