"""Which exporters ``configure_telemetry`` turns on, and what its failure lines say.

A Prometheus port names the metrics exporter; traces go over OTLP only when asked or when an
OTLP endpoint is configured; explicit arguments and ``OTEL_*_EXPORTER`` variables win.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from structlog.testing import capture_logs

from symfonic_otel.export.handle import explain_metrics_shutdown
from symfonic_otel.export.setup import configure_telemetry
from tests.support.otlp_receiver import CLEANUP_MS, refused_endpoint

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "prometheus_only.py"


pytestmark = pytest.mark.usefixtures("clean_otel_env")


def _configured(**kwargs: Any) -> dict[str, Any]:
    """The ``telemetry_configured`` line of a real configuration (shut down right after)."""
    kwargs.setdefault("set_global", False)
    with capture_logs() as logs:
        configure_telemetry(**kwargs).shutdown(timeout_millis=CLEANUP_MS)
    return next(e for e in logs if e["event"] == "symfonic_otel.telemetry_configured")


def _signals(line: dict[str, Any]) -> tuple[bool, bool]:
    return line["traces_otlp"] is not None, line["metrics_otlp"] is not None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_prometheus_only_example_is_quiet_and_shuts_down_clean() -> None:
    """The docs example, run as written (on a free port) with no collector anywhere."""
    source = EXAMPLE.read_text(encoding="utf-8")
    assert "prometheus_port=9464" in source
    source = source.replace("prometheus_port=9464", f"prometheus_port={_free_port()}")
    script = (
        "import logging, sys\n"
        "logging.basicConfig(level=logging.INFO, stream=sys.stderr)\n"
        "exec(compile(sys.stdin.read(), 'prometheus_only.py', 'exec'))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    result = subprocess.run(
        [sys.executable, "-c", script],
        input=source,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert "UNAVAILABLE" not in result.stderr
    assert "WARNING" not in result.stderr and "ERROR" not in result.stderr, result.stderr
    assert "traces_otlp=None metrics_otlp=None" in result.stderr
    assert re.search(r"telemetry_shutdown clean=True dropped_spans=0 ", result.stderr)


def test_without_a_prometheus_port_both_signals_default_to_otlp() -> None:
    assert _signals(_configured()) == (True, True)


def test_a_prometheus_port_alone_turns_no_otlp_on() -> None:
    assert _signals(_configured(prometheus_port=0)) == (False, False)


def test_an_otlp_endpoint_sends_traces_but_metrics_stay_scraped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", refused_endpoint())
    assert _signals(_configured(prometheus_port=0)) == (True, False)


def test_a_traces_endpoint_sends_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", refused_endpoint() + "/v1/traces")
    assert _signals(_configured(prometheus_port=0)) == (True, False)


def test_a_metrics_endpoint_also_pushes_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", refused_endpoint())
    assert _signals(_configured(prometheus_port=0)) == (False, True)


def test_an_empty_endpoint_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "  ")
    assert _signals(_configured(prometheus_port=0)) == (False, False)


@pytest.mark.parametrize(
    ("traces", "metrics", "expected"),
    [
        ("otlp", None, (True, False)),
        (None, "otlp", (False, True)),
        ("otlp", "otlp,console", (True, True)),
        ("none", "none", (False, False)),
    ],
)
def test_exporter_variables_win_over_the_prometheus_default(
    monkeypatch: pytest.MonkeyPatch,
    traces: str | None,
    metrics: str | None,
    expected: tuple[bool, bool],
) -> None:
    if traces is not None:
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", traces)
    if metrics is not None:
        monkeypatch.setenv("OTEL_METRICS_EXPORTER", metrics)
    assert _signals(_configured(prometheus_port=0)) == expected


def test_the_none_variable_still_disables_otlp_without_a_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert _signals(_configured()) == (False, True)


@pytest.mark.parametrize("forced", [True, False])
def test_the_otlp_argument_wins_over_everything(
    monkeypatch: pytest.MonkeyPatch, forced: bool
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none" if forced else "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", refused_endpoint())
    assert _signals(_configured(prometheus_port=0, otlp=forced)) == (forced, forced)


def test_a_span_export_failure_says_what_failed_and_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", refused_endpoint())
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "0.2")  # gives up after one refusal
    with capture_logs() as logs:
        telemetry = configure_telemetry(set_global=False, metric_readers=(), otlp=True)
        with telemetry.tracer_provider.get_tracer("t").start_as_current_span("work"):
            pass
        telemetry.force_flush(timeout_millis=5_000)
        telemetry.shutdown(timeout_millis=2_000)
    failure = next(e for e in logs if e.get("kind") == "span_export_failed")
    assert failure["exporter"] == "OTLPSpanExporter"
    assert "collector is unreachable" in failure["reason"]
    assert "error_type" not in failure  # nothing raised: no empty error field


def test_a_metrics_shutdown_failure_names_the_readers_and_the_cause() -> None:
    """The SDK's aggregate error, produced for real: a zero budget reaches no reader."""
    provider = MeterProvider(metric_readers=[InMemoryMetricReader(), InMemoryMetricReader()])
    with pytest.raises(Exception) as raised:
        provider.shutdown(timeout_millis=0)
    explained = explain_metrics_shutdown(raised.value)
    assert explained["failed_readers"] == ["InMemoryMetricReader", "InMemoryMetricReader"]
    assert "budget ran out" in explained["reason"]


def test_an_unrecognised_metrics_error_still_gets_a_reason() -> None:
    assert explain_metrics_shutdown(RuntimeError("secret text")) == {
        "reason": "the meter provider failed to shut down its metric readers"
    }
