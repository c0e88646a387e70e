"""Which exporters ``configure_telemetry`` turns on, decided the way OpenTelemetry decides it.

The rule, strongest first:

1. ``otlp=True`` / ``otlp=False`` force OTLP on or off for both signals.
2. A set ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` is followed for its signal
   (``otlp``, ``console``, ``none``, comma-separated), as in every OpenTelemetry SDK.
3. Without ``prometheus_port``: OTLP for both signals, the specification's default.
4. With ``prometheus_port`` (and no variable for the signal): the Prometheus endpoint *is* the
   metrics exporter, the way ``OTEL_METRICS_EXPORTER=prometheus`` replaces ``otlp`` in the
   SDKs' autoconfiguration, so metrics are not also pushed (unless
   ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` names a metrics receiver); traces go over OTLP only
   if an endpoint is configured (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
   ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``). A Prometheus-only setup with no collector is then
   quiet: no connection retries, no export errors, a prompt and clean shutdown.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final

from opentelemetry.environment_variables import OTEL_METRICS_EXPORTER, OTEL_TRACES_EXPORTER
from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
)

from symfonic_otel.export.exporters import selected_exporters

__all__ = ["ExporterChoice", "choose_exporters"]

_TRACE_ENDPOINTS: Final = (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT)
_METRIC_ENDPOINTS: Final = (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,)


@dataclass(frozen=True)
class ExporterChoice:
    """The exporters of each signal (the Prometheus reader is decided by its port alone)."""

    traces_otlp: bool
    traces_console: bool
    metrics_otlp: bool
    metrics_console: bool


def _is_set(variables: tuple[str, ...]) -> bool:
    return any(os.environ.get(name, "").strip() for name in variables)


def _signal(variable: str, endpoints: tuple[str, ...], *, prometheus: bool) -> tuple[bool, bool]:
    """(otlp, console) for one signal when ``otlp`` was not forced."""
    names = selected_exporters(variable)
    if names is not None:
        return "otlp" in names, "console" in names
    if not prometheus:
        return True, False
    return _is_set(endpoints), False


def choose_exporters(*, otlp: bool | None, console: bool, prometheus: bool) -> ExporterChoice:
    """Apply the module's rule to the arguments and the process environment."""
    if otlp is not None:
        return ExporterChoice(otlp, console, otlp, console)
    traces_otlp, traces_console = _signal(
        OTEL_TRACES_EXPORTER, _TRACE_ENDPOINTS, prometheus=prometheus
    )
    # Metrics: with a Prometheus port the endpoint is the exporter; the general OTLP endpoint
    # names where traces go and does not also push every metric twice.
    metrics_otlp, metrics_console = _signal(
        OTEL_METRICS_EXPORTER, _METRIC_ENDPOINTS, prometheus=prometheus
    )
    return ExporterChoice(
        traces_otlp=traces_otlp,
        traces_console=console or traces_console,
        metrics_otlp=metrics_otlp,
        metrics_console=console or metrics_console,
    )
