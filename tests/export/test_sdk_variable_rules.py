"""The rule each guarded SDK variable is checked against, and what stands in for a bad value.

The warning for a bad value quotes both (``X='v' is not <expected>; using <instead>``), so
these texts are what an operator reads; the stand-ins are the SDK's documented defaults.
``test_bad_environment_variables.py`` proves the warning and the fallback through
``configure_telemetry``.
"""

from __future__ import annotations

import pytest

from symfonic_otel.export.sdk_settings import SDK_SETTINGS

RULES = [
    ("OTEL_EXPORTER_OTLP_TIMEOUT", "a number 0 or more (seconds)", "the default, 10 s"),
    (
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "a number 0 or more (seconds)",
        "OTEL_EXPORTER_OTLP_TIMEOUT, or the default, 10 s",
    ),
    (
        "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
        "a number 0 or more (seconds)",
        "OTEL_EXPORTER_OTLP_TIMEOUT, or the default, 10 s",
    ),
    (
        "OTEL_EXPORTER_OTLP_COMPRESSION",
        "one of 'deflate', 'gzip', 'none'",
        "the default, no compression",
    ),
    (
        "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
        "one of 'deflate', 'gzip', 'none'",
        "OTEL_EXPORTER_OTLP_COMPRESSION, or no compression",
    ),
    (
        "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
        "one of 'deflate', 'gzip', 'none'",
        "OTEL_EXPORTER_OTLP_COMPRESSION, or no compression",
    ),
    (
        "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
        "one of 'cumulative', 'delta', 'lowmemory'",
        "the default, 'cumulative'",
    ),
    ("OTEL_METRIC_EXPORT_INTERVAL", "a number at least 1 (milliseconds)", "the default, 60000 ms"),
    ("OTEL_METRIC_EXPORT_TIMEOUT", "a number 0 or more (ms)", "the default, 30000 ms"),
    ("OTEL_BSP_SCHEDULE_DELAY", "a whole number at least 1 (milliseconds)", "the default, 5000 ms"),
    ("OTEL_BSP_EXPORT_TIMEOUT", "a whole number 0 or more (milliseconds)", "the default, 30000 ms"),
    ("OTEL_BSP_MAX_QUEUE_SIZE", "a whole number at least 1", "the default, 2048"),
    ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "a whole number at least 1", "the default, 512"),
    (
        "OTEL_METRICS_EXEMPLAR_FILTER",
        "one of 'always_off', 'always_on', 'trace_based'",
        "the default, 'trace_based'",
    ),
    ("OTEL_ATTRIBUTE_COUNT_LIMIT", "a whole number 0 or more", "the default"),
    ("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "a whole number 0 or more", "the default"),
    ("OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", "a whole number 0 or more", "the default"),
    ("OTEL_LINK_ATTRIBUTE_COUNT_LIMIT", "a whole number 0 or more", "the default"),
    ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "a whole number 0 or more", "the default"),
    ("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "a whole number 0 or more", "the default"),
    ("OTEL_SPAN_EVENT_COUNT_LIMIT", "a whole number 0 or more", "the default"),
    ("OTEL_SPAN_LINK_COUNT_LIMIT", "a whole number 0 or more", "the default"),
]
AT_LEAST_ONE = (
    "OTEL_METRIC_EXPORT_INTERVAL",
    "OTEL_BSP_SCHEDULE_DELAY",
    "OTEL_BSP_MAX_QUEUE_SIZE",
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
)
WHOLE = ("OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT", "OTEL_SPAN_LINK_COUNT_LIMIT")
_BY_NAME = {setting.variable: setting for setting in SDK_SETTINGS}


def test_each_variable_states_its_rule_and_its_stand_in() -> None:
    assert [(s.variable, s.expected, s.instead) for s in SDK_SETTINGS] == RULES


def test_every_stand_in_is_the_documented_default() -> None:
    assert all(setting.replacement is None for setting in SDK_SETTINGS)


@pytest.mark.parametrize("variable", AT_LEAST_ONE)
def test_one_is_the_smallest_interval_or_size_accepted(variable: str) -> None:
    assert _BY_NAME[variable].valid("1")
    assert not _BY_NAME[variable].valid("0")


@pytest.mark.parametrize("variable", WHOLE)
def test_whole_number_variables_refuse_a_fraction(variable: str) -> None:
    assert _BY_NAME[variable].valid("2")
    assert not _BY_NAME[variable].valid("2.5")


@pytest.mark.parametrize(
    ("variable", "good", "bad"),
    [
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "0", "-1"),
        ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "2.5", "soon"),
        ("OTEL_METRIC_EXPORT_TIMEOUT", "0", "-0.5"),
        ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "GZIP", "br"),
        ("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "deflate", "zip"),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "none", "lz4"),
        ("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "lowmemory", "low"),
        ("OTEL_METRICS_EXEMPLAR_FILTER", "always_off", "sometimes"),
        ("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "0", "-1"),
    ],
)
def test_values_the_sdk_reads_pass_and_others_do_not(variable: str, good: str, bad: str) -> None:
    assert _BY_NAME[variable].valid(good)
    assert not _BY_NAME[variable].valid(bad)
