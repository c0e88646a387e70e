"""The exporter variables as a user sets them: what is chosen, and what the warning says.

``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` and the OTLP protocol variables are read
the OpenTelemetry way; a value the package cannot use warns with the whole sentence checked
here (what was wrong, what is used instead).
"""

from __future__ import annotations

from typing import Any

import pytest

from symfonic_otel.environment import TelemetrySettingWarning
from symfonic_otel.export.exporters import otlp_metric_exporter, protocol_for, selected_exporters
from symfonic_otel.export.selection import choose_exporters

_VARIABLES = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _warned(record: Any) -> list[str]:
    return [str(w.message) for w in record if isinstance(w.message, TelemetrySettingWarning)]


def test_unknown_exporter_names_beside_known_ones_are_ignored_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp,zipkin,Console")
    with pytest.warns(TelemetrySettingWarning) as record:
        assert selected_exporters("OTEL_TRACES_EXPORTER") == frozenset({"otlp", "console"})
    assert _warned(record) == [
        "OTEL_TRACES_EXPORTER='otlp,zipkin,Console' is not a list of 'console', 'none', "
        "'otlp'; using console, otlp (the other names ignored)"
    ]


def test_only_unknown_exporter_names_fall_back_to_the_default_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "zipkin")
    with pytest.warns(TelemetrySettingWarning) as record:
        assert selected_exporters("OTEL_METRICS_EXPORTER") is None
    assert _warned(record) == [
        "OTEL_METRICS_EXPORTER='zipkin' is not a list of 'console', 'none', 'otlp'; "
        "using the default exporters"
    ]


def test_bad_protocols_warn_and_fall_through_to_grpc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift")
    with pytest.warns(TelemetrySettingWarning) as record:
        assert protocol_for("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", None) == "grpc"
    assert _warned(record) == [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL='http/json' is not one of 'grpc', "
        "'http/protobuf'; using OTEL_EXPORTER_OTLP_PROTOCOL or the default, 'grpc'",
        "OTEL_EXPORTER_OTLP_PROTOCOL='thrift' is not one of 'grpc', 'http/protobuf'; "
        "using the default, 'grpc'",
    ]


@pytest.mark.parametrize(
    "variable", ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"]
)
def test_http_protobuf_is_chosen_from_either_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "HTTP/Protobuf")
    assert protocol_for("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", None) == "http/protobuf"


def test_the_http_metric_exporter_splits_exports_by_the_batch_size() -> None:
    exporter = otlp_metric_exporter("http/protobuf", batch_size=7)
    try:
        assert exporter._max_export_batch_size == 7  # type: ignore[attr-defined]
    finally:
        exporter.shutdown()


@pytest.mark.parametrize(
    ("traces", "metrics", "prometheus", "expected"),
    [
        ("console", "otlp", False, (False, True, True, False)),
        ("otlp,console", None, False, (True, True, True, False)),
        (None, None, False, (True, False, True, False)),
        (None, None, True, (False, False, False, False)),
    ],
)
def test_the_exporter_variables_choose_each_signal(
    monkeypatch: pytest.MonkeyPatch,
    traces: str | None,
    metrics: str | None,
    prometheus: bool,
    expected: tuple[bool, bool, bool, bool],
) -> None:
    if traces is not None:
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", traces)
    if metrics is not None:
        monkeypatch.setenv("OTEL_METRICS_EXPORTER", metrics)
    choice = choose_exporters(otlp=None, console=False, prometheus=prometheus)
    shown = (choice.traces_otlp, choice.traces_console, choice.metrics_otlp, choice.metrics_console)
    assert shown == expected
