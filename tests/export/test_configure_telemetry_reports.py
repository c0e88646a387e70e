"""What ``configure_telemetry`` says it built, and what it leaves behind when building fails.

The ``telemetry_configured`` line is how an operator checks a deployment's telemetry from its
logs: each field must say what was really built. A configuration that fails half-way must not
keep the Prometheus port it had already bound.
"""

from __future__ import annotations

import socket
import threading
import urllib.request
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from structlog.testing import capture_logs

from symfonic_otel import semconv
from symfonic_otel.emit.budget import sdk_bounds_series
from symfonic_otel.environment import TelemetrySettingWarning
from symfonic_otel.export.setup import configure_telemetry
from symfonic_otel.export.trace_exemplars import KeptTraceExemplarFilter

pytestmark = pytest.mark.usefixtures("clean_otel_and_symfonic_env")


def _lines(logs: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [line for line in logs if line["event"] == f"symfonic_otel.{event}"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_configured_line_names_the_service_the_endpoint_and_the_scope() -> None:
    with capture_logs() as logs:
        telemetry = configure_telemetry(
            service_name="  checkout  ", otlp=False, prometheus_port=0, set_global=False
        )
    try:
        [line] = _lines(logs, "telemetry_configured")
        assert line == {
            "event": "symfonic_otel.telemetry_configured",
            "log_level": "info",
            "service_name": "checkout",  # stripped, as the resource carries it
            "traces_otlp": None,
            "metrics_otlp": None,
            "console": False,
            "prometheus": f"127.0.0.1:{telemetry.prometheus_port}",
            "is_global": False,
            "healthy_trace_ratio": 1.0,
        }
        assert telemetry.resource.attributes["service.name"] == "checkout"
    finally:
        telemetry.shutdown(timeout_millis=1_000)


def test_console_output_is_reported_for_either_signal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "console")
    with capture_logs() as logs:
        telemetry = configure_telemetry(set_global=False, export_interval_ms=600_000)
    try:
        [line] = _lines(logs, "telemetry_configured")
        assert (line["console"], line["traces_otlp"], line["metrics_otlp"]) == (True, None, None)
    finally:
        with capture_logs():
            telemetry.shutdown(timeout_millis=1_000)


def test_a_ratio_with_no_otlp_trace_export_is_reported_unused() -> None:
    with capture_logs() as logs:
        telemetry = configure_telemetry(otlp=False, healthy_trace_ratio=0.25, set_global=False)
    telemetry.shutdown(timeout_millis=1_000)
    assert _lines(logs, "healthy_trace_ratio_unused") == [
        {
            "event": "symfonic_otel.healthy_trace_ratio_unused",
            "log_level": "info",
            "healthy_trace_ratio": 0.25,
            "reason": "outcome retention applies to the OTLP trace export, and none is configured",
        }
    ]
    assert telemetry.retention is None
    [line] = _lines(logs, "telemetry_configured")
    assert line["healthy_trace_ratio"] == 0.25


def test_exemplars_without_trace_ids_are_reported_with_the_fix() -> None:
    """Nothing exports spans: the line says why exemplars carry no trace ids and how to fix it."""
    with capture_logs() as logs:
        telemetry = configure_telemetry(otlp=False, set_global=False)
    telemetry.shutdown(timeout_millis=1_000)
    assert _lines(logs, "exemplars_without_trace_ids") == [
        {
            "event": "symfonic_otel.exemplars_without_trace_ids",
            "log_level": "info",
            "reason": "no trace exporter is configured, so no run's trace is stored: exemplars "
            "carry no trace ids until a span processor that exports is added (set "
            "OTEL_EXPORTER_OTLP_ENDPOINT, or pass span_processors)",
        }
    ]


def test_a_span_processor_of_the_callers_is_taken_to_export() -> None:
    with capture_logs() as logs:
        telemetry = configure_telemetry(
            otlp=False,
            span_processors=[SimpleSpanProcessor(InMemorySpanExporter())],
            set_global=False,
        )
    telemetry.shutdown(timeout_millis=1_000)
    assert not _lines(logs, "exemplars_without_trace_ids")


def test_a_ratio_of_one_holds_nothing_and_is_not_reported_unused() -> None:
    with capture_logs() as logs:
        telemetry = configure_telemetry(otlp=False, healthy_trace_ratio=1.0, set_global=False)
    telemetry.shutdown(timeout_millis=1_000)
    assert not _lines(logs, "healthy_trace_ratio_unused")


def test_a_failed_configuration_frees_the_prometheus_port_and_stops_its_thread() -> None:
    """The SDK refuses a reader another meter provider already owns, after the port is bound."""
    owned = InMemoryMetricReader()
    MeterProvider(metric_readers=[owned], shutdown_on_exit=False)
    port = _free_port()
    before = set(threading.enumerate())
    with pytest.raises(Exception, match="registered already") as raised:
        configure_telemetry(
            otlp=False, prometheus_port=port, metric_readers=[owned], set_global=False
        )
    assert raised.tb is not None  # the caller still holds the failure, and its frames
    with socket.socket() as again:
        again.bind(("127.0.0.1", port))  # the port is free again, not when collected
    serving = [
        t for t in set(threading.enumerate()) - before if t.name == "symfonic-otel-prometheus"
    ]
    for thread in serving:
        thread.join(timeout=1.0)
    assert not [thread for thread in serving if thread.is_alive()]


def test_spans_carry_the_configured_resource() -> None:
    spans = InMemorySpanExporter()
    telemetry = configure_telemetry(
        service_name="checkout",
        otlp=False,
        span_processors=[SimpleSpanProcessor(spans)],
        set_global=False,
    )
    with telemetry.tracer_provider.get_tracer("t").start_as_current_span("work"):
        pass
    telemetry.shutdown(timeout_millis=1_000)
    [span] = spans.get_finished_spans()
    assert span.resource.attributes["service.name"] == "checkout"


def test_metrics_carry_the_configured_resource() -> None:
    reader = InMemoryMetricReader()
    telemetry = configure_telemetry(
        service_name="checkout", otlp=False, metric_readers=[reader], set_global=False
    )
    data = reader.get_metrics_data()
    telemetry.shutdown(timeout_millis=1_000)
    assert data is not None
    assert [r.resource.attributes["service.name"] for r in data.resource_metrics] == ["checkout"]


def test_retention_holds_the_traces_and_reports_to_the_configured_meter_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")  # nothing listens
    reader = InMemoryMetricReader()
    with capture_logs():
        telemetry = configure_telemetry(
            healthy_trace_ratio=0.5, metric_readers=[reader], set_global=False
        )
        # A run's root span starts: the retention in front of the OTLP export holds its trace.
        telemetry.tracer_provider.get_tracer("t").start_span("invoke_agent")
        assert telemetry.retention is not None and telemetry.retention.held_traces == 1
        data = reader.get_metrics_data()
        telemetry.shutdown(timeout_millis=500)
    names = {
        metric.name
        for resource in (data.resource_metrics if data else ())
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
    assert semconv.RETENTION_TRACES.name in names


def test_console_output_goes_to_the_stdout_of_the_time_of_the_call(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A stdout redirected before ``configure_telemetry`` (here by capsys) gets the output."""
    telemetry = configure_telemetry(
        otlp=False, console=True, set_global=False, export_interval_ms=600_000
    )
    telemetry.meter_provider.get_meter("t").create_counter("console.proof").add(1)
    with telemetry.tracer_provider.get_tracer("t").start_as_current_span("printed-span"):
        pass
    with capture_logs():
        telemetry.shutdown(timeout_millis=2_000)
    out = capsys.readouterr().out
    assert '"name": "printed-span"' in out
    assert '"name": "console.proof"' in out


def test_only_a_ratio_below_one_puts_retention_in_front_of_the_otlp_export(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    kept: dict[float, bool] = {}
    for ratio in (1.0, 0.5):
        with capture_logs() as logs:
            telemetry = configure_telemetry(otlp=None, healthy_trace_ratio=ratio, set_global=False)
            telemetry.shutdown(timeout_millis=500)
        kept[ratio] = telemetry.retention is not None
        [line] = _lines(logs, "telemetry_configured")
        assert (line["traces_otlp"], line["metrics_otlp"]) == ("grpc", None)
    assert kept == {1.0: False, 0.5: True}


def test_a_bad_otlp_variable_is_checked_when_only_traces_go_over_otlp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "abc")
    with pytest.warns(TelemetrySettingWarning, match="OTEL_EXPORTER_OTLP_TIMEOUT='abc'"):
        telemetry = configure_telemetry(otlp=None, set_global=False)
    with capture_logs():
        telemetry.shutdown(timeout_millis=500)


def test_the_dropped_spans_counter_reports_every_reason_from_the_start() -> None:
    """At zero too, so ``rate()`` sees the first loss (no trace export here: nothing lost)."""
    reader = InMemoryMetricReader()
    telemetry = configure_telemetry(otlp=False, metric_readers=[reader], set_global=False)
    data = reader.get_metrics_data()
    telemetry.shutdown(timeout_millis=1_000)
    [metric] = [
        metric
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == semconv.DROPPED_SPANS.name
    ]
    assert (metric.unit, metric.description) == (
        semconv.DROPPED_SPANS.unit,
        semconv.DROPPED_SPANS.description,
    )
    points = {
        point.attributes[semconv.TELEMETRY_DROP_REASON]: point.value
        for point in metric.data.data_points
    }
    assert points == {"queue_full": 0, "export_failed": 0, "unencodable": 0}


@pytest.mark.parametrize(
    ("value", "kept_traces_only"), [(None, True), ("TRACE_BASED", True), ("always_on", False)]
)
def test_exemplars_name_only_kept_traces_unless_the_variable_picks_another_filter(
    monkeypatch: pytest.MonkeyPatch, value: str | None, kept_traces_only: bool
) -> None:
    if value is not None:
        monkeypatch.setenv("OTEL_METRICS_EXEMPLAR_FILTER", value)
    telemetry = configure_telemetry(otlp=False, set_global=False)
    chosen = telemetry.meter_provider._sdk_config.exemplar_filter  # type: ignore[attr-defined]
    telemetry.shutdown(timeout_millis=1_000)
    assert isinstance(chosen, KeptTraceExemplarFilter) is kept_traces_only


def test_the_packages_instruments_keep_every_series_past_the_sdks_default_limit() -> None:
    """The SDK folds an instrument's 2,001st attribute set into an overflow series; the
    package's own meter is given its series budget instead (``budget.cardinality_view``)."""
    if not sdk_bounds_series():
        pytest.skip("this SDK has no cardinality limit to raise")
    telemetry = configure_telemetry(otlp=False, prometheus_port=0, set_global=False)
    try:
        probe = telemetry.meter_provider.get_meter(semconv.SCOPE_NAME).create_counter("probe")
        for index in range(2_001):
            probe.add(1, {"probe.index": str(index)})
        url = f"http://127.0.0.1:{telemetry.prometheus_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            body = response.read().decode()
        series = [line for line in body.splitlines() if line.startswith("probe_total{")]
        assert len(series) == 2_001
        assert "otel_metric_overflow" not in body
    finally:
        telemetry.shutdown(timeout_millis=1_000)
