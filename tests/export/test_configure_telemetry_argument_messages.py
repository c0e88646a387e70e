"""``configure_telemetry``'s argument checks: the edges of each range are accepted, and each
refusal says, in full, which argument is wrong, what it must be, and what it got.

The checks run before anything is built (``tests/package/test_bad_configuration.py`` proves
that through ``configure_telemetry``); here they are called directly, so a bound such as port
65535 is checked without binding it.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from symfonic_otel.export.arguments import validate_arguments, validate_components

VALID: dict[str, Any] = {
    "service_name": None,
    "resource_attributes": None,
    "otlp": None,
    "otlp_protocol": None,
    "console": False,
    "prometheus_port": None,
    "prometheus_host": "127.0.0.1",
    "set_global": False,
    "export_interval_ms": None,
    "otlp_metric_batch_size": 2_000,
}


@pytest.mark.parametrize(
    "change",
    [
        {"prometheus_port": 0},
        {"prometheus_port": 65_535},
        {"export_interval_ms": 1},
        {"otlp_metric_batch_size": 1},
        {"service_name": "checkout"},
        {"resource_attributes": {}},
        {"resource_attributes": {"team": ""}},
        {"otlp": True},
        {"otlp": False},
        {"otlp_protocol": "grpc"},
        {"otlp_protocol": "http/protobuf"},
        {"console": True, "set_global": True},
        {"prometheus_host": "0.0.0.0"},
    ],
)
def test_values_at_the_edges_of_each_range_are_accepted(change: dict[str, Any]) -> None:
    validate_arguments(**{**VALID, **change})


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (
            {"service_name": ""},
            ValueError,
            "service_name must be a non-empty str or None, got ''",
        ),
        (
            {"resource_attributes": [("team", "sre")]},
            TypeError,
            "resource_attributes must be a mapping of str to str, got [('team', 'sre')]",
        ),
        (
            {"resource_attributes": {1: "sre"}},
            TypeError,
            "resource_attributes must map non-empty str keys to str values, got 1: 'sre'",
        ),
        (
            {"resource_attributes": {"team": None}},
            TypeError,
            "resource_attributes must map non-empty str keys to str values, got 'team': None",
        ),
        ({"console": 1}, TypeError, "console must be a bool, got 1"),
        ({"set_global": None}, TypeError, "set_global must be a bool, got None"),
        ({"otlp": "yes"}, TypeError, "otlp must be a bool or None, got 'yes'"),
        (
            {"otlp_protocol": "http"},
            ValueError,
            "otlp_protocol must be one of 'grpc', 'http/protobuf' or None, got 'http'",
        ),
        (
            {"prometheus_port": 65_536},
            ValueError,
            "prometheus_port must be an int between 0 and 65535 (0 picks a free port) or None, "
            "got 65536",
        ),
        (
            {"prometheus_port": -1},
            ValueError,
            "prometheus_port must be an int between 0 and 65535 (0 picks a free port) or None, "
            "got -1",
        ),
        (
            {"prometheus_host": " "},
            ValueError,
            "prometheus_host must be a non-empty str, got ' '",
        ),
        (
            {"export_interval_ms": 0},
            ValueError,
            "export_interval_ms must be a positive int or None, got 0",
        ),
        (
            {"otlp_metric_batch_size": 0},
            ValueError,
            "otlp_metric_batch_size must be a positive int (data points per OTLP message), got 0",
        ),
        (
            {"otlp_metric_batch_size": False},
            ValueError,
            "otlp_metric_batch_size must be a positive int (data points per OTLP message), "
            "got False",
        ),
        (
            {"otlp_metric_batch_size": True},  # a bool is no count, though True == 1
            ValueError,
            "otlp_metric_batch_size must be a positive int (data points per OTLP message), "
            "got True",
        ),
        (
            {"export_interval_ms": True},
            ValueError,
            "export_interval_ms must be a positive int or None, got True",
        ),
    ],
)
def test_each_refusal_names_the_argument_the_rule_and_the_value(
    change: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        validate_arguments(**{**VALID, **change})
    assert str(raised.value) == message


def test_real_sdk_components_are_accepted() -> None:
    validate_components([SimpleSpanProcessor(InMemorySpanExporter())], (InMemoryMetricReader(),))


@pytest.mark.parametrize(
    ("processors", "readers", "error", "message"),
    [
        (
            b"processor",
            (),
            TypeError,
            "span_processors must be a sequence of span processors, got b'processor'",
        ),
        (
            [InMemorySpanExporter()],
            (),
            TypeError,
            "span_processors[0] must be a span processor (on_start, on_end, shutdown, "
            "force_flush), got <",
        ),
        (
            (),
            "reader",
            TypeError,
            "metric_readers must be a sequence of MetricReader, got 'reader'",
        ),
        ((), [None], TypeError, "metric_readers[0] must be a MetricReader, got None"),
    ],
)
def test_each_component_refusal_names_the_component_and_its_position(
    processors: object, readers: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        validate_components(processors, readers)
    assert str(raised.value).startswith(message)
    if not message.endswith("<"):
        assert str(raised.value) == message


def test_the_same_reader_twice_is_refused() -> None:
    reader = InMemoryMetricReader()
    with pytest.raises(ValueError) as raised:
        validate_components((), [reader, reader])
    assert str(raised.value) == "metric_readers must not hold the same reader twice"
