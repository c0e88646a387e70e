"""The SDK's own variables that ``configure_telemetry`` gets read when it builds components.

The OTLP exporters, the batch span processor, the periodic metric reader and the providers read
these at construction. Some raise on a bad value (``OTEL_EXPORTER_OTLP_TIMEOUT=abc``: "could
not convert string to float", without the variable's name; ``OTEL_EXPORTER_OTLP_COMPRESSION``,
the span limits, ``OTEL_METRICS_EXEMPLAR_FILTER``), others warn without naming it. Built inside
``environment.substituted(SDK_SETTINGS)``, each bad one gets the package's one warning, naming
the variable and the value, and the component is built with the documented default.
"""

from __future__ import annotations

from typing import Final

from opentelemetry.sdk.environment_variables import (
    OTEL_ATTRIBUTE_COUNT_LIMIT,
    OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT,
    OTEL_BSP_EXPORT_TIMEOUT,
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
    OTEL_BSP_MAX_QUEUE_SIZE,
    OTEL_BSP_SCHEDULE_DELAY,
    OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT,
    OTEL_EXPORTER_OTLP_COMPRESSION,
    OTEL_EXPORTER_OTLP_METRICS_COMPRESSION,
    OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE,
    OTEL_EXPORTER_OTLP_METRICS_TIMEOUT,
    OTEL_EXPORTER_OTLP_TIMEOUT,
    OTEL_EXPORTER_OTLP_TRACES_COMPRESSION,
    OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,
    OTEL_LINK_ATTRIBUTE_COUNT_LIMIT,
    OTEL_METRIC_EXPORT_INTERVAL,
    OTEL_METRIC_EXPORT_TIMEOUT,
    OTEL_METRICS_EXEMPLAR_FILTER,
    OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT,
    OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT,
    OTEL_SPAN_EVENT_COUNT_LIMIT,
    OTEL_SPAN_LINK_COUNT_LIMIT,
)

from symfonic_otel.environment import Setting, choice_setting, number_setting

__all__ = ["SDK_SETTINGS", "settings_for"]

_COMPRESSIONS: Final = ("gzip", "deflate", "none")
_SPAN_LIMITS: Final = (
    OTEL_ATTRIBUTE_COUNT_LIMIT,
    OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT,
    OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT,
    OTEL_LINK_ATTRIBUTE_COUNT_LIMIT,
    OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT,
    OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT,
    OTEL_SPAN_EVENT_COUNT_LIMIT,
    OTEL_SPAN_LINK_COUNT_LIMIT,
)

_OTLP: Final[tuple[Setting, ...]] = (
    number_setting(
        OTEL_EXPORTER_OTLP_TIMEOUT, replacement=None, instead="the default, 10 s", unit="seconds"
    ),
    *(
        number_setting(
            variable,
            replacement=None,
            instead="OTEL_EXPORTER_OTLP_TIMEOUT, or the default, 10 s",
            unit="seconds",
        )
        for variable in (OTEL_EXPORTER_OTLP_TRACES_TIMEOUT, OTEL_EXPORTER_OTLP_METRICS_TIMEOUT)
    ),
    choice_setting(OTEL_EXPORTER_OTLP_COMPRESSION, _COMPRESSIONS, "the default, no compression"),
    *(
        choice_setting(variable, _COMPRESSIONS, "OTEL_EXPORTER_OTLP_COMPRESSION, or no compression")
        for variable in (
            OTEL_EXPORTER_OTLP_TRACES_COMPRESSION,
            OTEL_EXPORTER_OTLP_METRICS_COMPRESSION,
        )
    ),
    choice_setting(
        OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE,
        ("cumulative", "delta", "lowmemory"),
        "the default, 'cumulative'",
    ),
)
_PERIODIC_READER: Final[tuple[Setting, ...]] = (
    number_setting(
        OTEL_METRIC_EXPORT_INTERVAL,
        replacement=None,
        instead="the default, 60000 ms",
        minimum=1,
        unit="milliseconds",
    ),
    number_setting(
        OTEL_METRIC_EXPORT_TIMEOUT, replacement=None, instead="the default, 30000 ms", unit="ms"
    ),
)
_BATCH_SPANS: Final[tuple[Setting, ...]] = (
    number_setting(
        OTEL_BSP_SCHEDULE_DELAY,
        replacement=None,
        instead="the default, 5000 ms",
        minimum=1,
        integer=True,
        unit="milliseconds",
    ),
    number_setting(
        OTEL_BSP_EXPORT_TIMEOUT,
        replacement=None,
        instead="the default, 30000 ms",
        integer=True,
        unit="milliseconds",
    ),
    number_setting(
        OTEL_BSP_MAX_QUEUE_SIZE,
        replacement=None,
        instead="the default, 2048",
        minimum=1,
        integer=True,
    ),
    number_setting(
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
        replacement=None,
        instead="the default, 512",
        minimum=1,
        integer=True,
    ),
)
_PROVIDERS: Final[tuple[Setting, ...]] = (
    choice_setting(
        OTEL_METRICS_EXEMPLAR_FILTER,
        ("always_on", "always_off", "trace_based"),
        "the default, 'trace_based'",
    ),
    *(
        number_setting(variable, replacement=None, instead="the default", integer=True)
        for variable in _SPAN_LIMITS
    ),
)
SDK_SETTINGS: Final = (*_OTLP, *_PERIODIC_READER, *_BATCH_SPANS, *_PROVIDERS)


def settings_for(*, otlp: bool, periodic: bool, batch_spans: bool) -> tuple[Setting, ...]:
    """The variables the components about to be built read (an unused one is not checked)."""
    return (
        *(_OTLP if otlp else ()),
        *(_PERIODIC_READER if periodic else ()),
        *(_BATCH_SPANS if batch_spans else ()),
        *_PROVIDERS,
    )
