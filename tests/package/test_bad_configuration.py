"""Bad configuration fails fast, at construction, with a message naming the argument at fault.

Complements the cases already covered elsewhere (not repeated here):
``test_otlp_export.py::test_bad_arguments_are_rejected_by_name`` /
``test_bad_argument_types_are_rejected_by_name`` / ``test_unsupported_protocol_in_the_environment``
(``configure_telemetry``), ``test_handler_robustness.py::test_bad_constructor_arguments_fail_fast``
(``OTelCallbackHandler``) and ``test_agent_events.py::test_config_validation_names_the_field``
(``FrameworkConfig``). Bad *events* never fail: see ``test_handler_robustness.py``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, InMemoryMetricReader
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from symfonic_otel import OTelCallbackHandler, configure_telemetry
from symfonic_otel.agent import FrameworkConfig
from symfonic_otel.cli import EXIT_USAGE, main
from symfonic_otel.demo import DemoOptions
from symfonic_otel.environment import TelemetrySettingWarning

pytestmark = pytest.mark.usefixtures("clean_otel_env")


@pytest.fixture
def structlog_config() -> Iterator[None]:
    """The CLI reconfigures structlog for the demo; keep that out of the other tests."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


_READER = InMemoryMetricReader()

# --- configure_telemetry --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"prometheus_port": 9464.0}, "prometheus_port"),
        ({"prometheus_port": 65_536}, "prometheus_port"),
        ({"prometheus_host": None}, "prometheus_host"),
        ({"otlp_protocol": "GRPC"}, "otlp_protocol"),
        ({"otlp_protocol": ""}, "otlp_protocol"),
        ({"service_name": 123}, "service_name"),
        ({"export_interval_ms": -5}, "export_interval_ms"),
        ({"export_interval_ms": 1.5}, "export_interval_ms"),
        ({"export_interval_ms": True}, "export_interval_ms"),
        ({"resource_attributes": ["team=sre"]}, "resource_attributes"),
        ({"resource_attributes": {"": "x"}}, "resource_attributes"),
        ({"set_global": "no"}, "set_global"),
        ({"console": None}, "console"),
        ({"healthy_trace_ratio": 1.01}, "healthy_trace_ratio"),
        ({"healthy_trace_ratio": "0.01"}, "healthy_trace_ratio"),
        ({"span_processors": [1]}, r"span_processors\[0\]"),
        ({"span_processors": None}, "span_processors"),
        ({"span_processors": "processor"}, "span_processors"),
        (
            {"span_processors": [SimpleSpanProcessor(ConsoleSpanExporter()), object()]},
            r"span_processors\[1\]",
        ),
        ({"metric_readers": [1]}, r"metric_readers\[0\]"),
        ({"metric_readers": InMemoryMetricReader()}, "metric_readers"),
        ({"metric_readers": [ConsoleMetricExporter()]}, r"metric_readers\[0\]"),
        ({"metric_readers": [_READER, _READER]}, "metric_readers"),
    ],
)
def test_configure_telemetry_rejects_bad_arguments_before_building_anything(
    kwargs: dict[str, Any], argument: str
) -> None:
    threads = threading.active_count()
    kwargs = {"set_global": False, "prometheus_port": 0, **kwargs}
    with pytest.raises((ValueError, TypeError), match=rf"^{argument} must"):
        configure_telemetry(**kwargs)
    assert threading.active_count() == threads  # no exporter, reader or metrics server started


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "json"),
        ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/json"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "kafka"),
    ],
)
def test_unsupported_protocol_variable_is_named_with_its_value(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    """The environment's policy: one warning naming it, the default used, the app starts."""
    monkeypatch.setenv(variable, value)
    with pytest.warns(TelemetrySettingWarning, match=re.escape(f"{variable}={value!r} is not")):
        telemetry = configure_telemetry(set_global=False, otlp=True)
    telemetry.shutdown(timeout_millis=200)


@pytest.mark.parametrize("operation", ["force_flush", "shutdown"])
@pytest.mark.parametrize("timeout", [-1, True, "1s", float("nan")])
def test_flush_and_shutdown_reject_a_bad_timeout(operation: str, timeout: object) -> None:
    with configure_telemetry(otlp=False, set_global=False) as telemetry:
        with pytest.raises(ValueError, match=r"^timeout_millis must be"):
            getattr(telemetry, operation)(timeout_millis=timeout)
        assert not telemetry.is_shut_down  # a rejected call changes nothing


# --- OTelCallbackHandler --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"run_ttl_s": 0}, "run_ttl_s"),
        ({"run_ttl_s": float("inf")}, "run_ttl_s"),
        ({"run_ttl_s": "60"}, "run_ttl_s"),
        ({"run_ttl_s": True}, "run_ttl_s"),
        ({"max_open_runs": -5}, "max_open_runs"),
        ({"max_open_runs": 1.5}, "max_open_runs"),
        ({"max_open_runs": True}, "max_open_runs"),
        ({"max_tenants": -1}, "max_tenants"),
        ({"max_tenants": "500"}, "max_tenants"),
        ({"capture_content": 1}, "capture_content"),
        ({"capture_content": "SPAN_ONLY"}, "capture_content"),  # the env value, not the argument
        ({"agent_name": None}, "agent_name"),
        ({"agent_name": "   "}, "agent_name"),
        ({"tenant_id": b"acme"}, "tenant_id"),
    ],
)
def test_handler_rejects_bad_arguments_naming_them(kwargs: dict[str, Any], argument: str) -> None:
    with pytest.raises((ValueError, TypeError), match=rf"^{argument} must"):
        OTelCallbackHandler(**kwargs)


# --- FrameworkConfig ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("recursion_limit", -1),
        ("recursion_limit", 2.5),
        ("loop_detection_threshold", 0),
        ("loop_detection_window", True),
        ("fabrication_check", None),
        ("fabrication_check", "REFUSE"),
        ("fabrication_refuse_min_confidence", -0.1),
        ("fabrication_refuse_min_confidence", "0.8"),
        ("fabrication_refuse_min_confidence", True),
        ("max_length_recoveries", 1.0),
    ],
)
def test_framework_config_rejects_bad_values_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"^FrameworkConfig\.{field} must"):
        FrameworkConfig(**{field: value})  # type: ignore[arg-type]


# --- the demo: DemoOptions and the CLI flags ------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        ({"runs": 0}, "--runs"),
        ({"runs": -1}, "--runs"),
        ({"tenants": 0}, "--tenants"),
        ({"tenants": 1001}, "--tenants"),
        ({"prometheus_port": -1}, "--prometheus-port"),
        ({"prometheus_port": 65_536}, "--prometheus-port"),
        ({"duration_s": 0}, "--duration"),
        ({"duration_s": -1.0}, "--duration"),
        ({"duration_s": float("nan")}, "--duration"),
        ({"rate": 0}, "--rate"),
        ({"rate": float("nan")}, "--rate"),
        ({"concurrency": 0}, "--concurrency"),
        ({"runs": "5"}, "--runs"),
        ({"runs": 2.5}, "--runs"),
        ({"tenants": True}, "--tenants"),
        ({"duration_s": float("inf")}, "--duration"),
    ],
)
def test_demo_options_reject_bad_values_naming_the_flag(kwargs: dict[str, Any], flag: str) -> None:
    with pytest.raises(ValueError, match=rf"^{flag} must"):
        DemoOptions(**kwargs)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["demo", "--runs", "0"], "argument --runs: must be at least 1"),
        (["demo", "--runs", "many"], "argument --runs: expected a whole number"),
        (["demo", "--tenants", "0"], "argument --tenants: must be at least 1"),
        (["demo", "--tenants", "1001"], "--tenants must be at most 1000"),
        (["demo", "--prometheus-port", "70000"], "argument --prometheus-port: must be a port"),
        (["demo", "--prometheus-port", "http"], "argument --prometheus-port: expected a port"),
        (["demo", "--duration", "0"], "argument --duration: must be a positive number"),
        (["demo", "--duration", "inf"], "argument --duration: must be a positive number"),
        (["demo", "--duration", "soon"], "argument --duration: expected a number"),
        (["demo", "--rate", "-2"], "argument --rate: must be a positive number"),
        (["demo", "--seed", "x"], "argument --seed: expected a whole number"),
        (["demo", "--seed", "-1"], "argument --seed: must be 0 or more"),
        (["demo", "--bogus"], "unrecognized arguments: --bogus"),
        (["launch"], "argument command: invalid choice: 'launch'"),
    ],
)
def test_cli_rejects_bad_flags_with_one_line_naming_them(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str], structlog_config: None
) -> None:
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    assert code == EXIT_USAGE
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], captured.err  # one line, no usage dump
