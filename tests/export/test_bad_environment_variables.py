"""One policy for a bad telemetry variable: one warning naming it and its value, the default
used, the application starts. The demo, a command the user just typed, prints one line instead
and exits with 2."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from symfonic_otel import OTelCallbackHandler, configure_telemetry, semconv
from symfonic_otel.environment import TelemetrySettingWarning, read_number
from symfonic_otel.export.handle import Telemetry
from symfonic_otel.export.retention_rules import ratio_from_env
from symfonic_otel.export.sdk_settings import SDK_SETTINGS
from tests.support.otlp_receiver import CLEANUP_MS

ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("clean_otel_env")


def _exporter(telemetry: Telemetry, kind: str) -> object:
    return next(e for e in telemetry._exporters if type(e).__name__ == kind)


def _span_exporter_timeout(t: Telemetry) -> bool:
    return _exporter(t, "OTLPSpanExporter")._timeout == 10  # type: ignore[attr-defined]


def _metric_reader_interval(t: Telemetry) -> bool:
    readers = t.meter_provider._metric_readers  # type: ignore[attr-defined]
    return any(getattr(r, "_export_interval_millis", None) == 60_000 for r in readers)


def _traces_on(t: Telemetry) -> bool:
    return any(type(e).__name__ == "OTLPSpanExporter" for e in t._exporters)


def _grpc(t: Telemetry) -> bool:
    return "grpc" in type(_exporter(t, "OTLPSpanExporter")).__module__


def _span_limits_default(t: Telemetry) -> bool:
    return t.tracer_provider._span_limits.max_span_attributes == 128  # type: ignore[attr-defined]


def _anything(t: Telemetry) -> bool:
    return isinstance(t.tracer_provider, TracerProvider)


# variable, bad value, what shows the default was used
CASES: list[tuple[str, str, Callable[[Telemetry], bool]]] = [
    ("OTEL_EXPORTER_OTLP_PROTOCOL", "bogus", _grpc),
    ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json", _grpc),
    ("OTEL_EXPORTER_OTLP_TIMEOUT", "abc", _span_exporter_timeout),
    ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "abc", _span_exporter_timeout),
    ("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "-1", _anything),
    ("OTEL_EXPORTER_OTLP_COMPRESSION", "bogus", _anything),
    ("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "zip", _anything),
    ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "br", _anything),
    ("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "bogus", _anything),
    ("OTEL_METRIC_EXPORT_INTERVAL", "abc", _metric_reader_interval),
    ("OTEL_METRIC_EXPORT_TIMEOUT", "abc", _anything),
    ("OTEL_BSP_SCHEDULE_DELAY", "abc", _anything),
    ("OTEL_BSP_MAX_QUEUE_SIZE", "0", _anything),
    ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1.5", _anything),
    ("OTEL_BSP_EXPORT_TIMEOUT", "soon", _anything),
    ("OTEL_TRACES_EXPORTER", "bogus", _traces_on),
    ("OTEL_METRICS_EXPORTER", "bogus", _anything),
    ("OTEL_METRICS_EXEMPLAR_FILTER", "bogus", _anything),
    ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "abc", _span_limits_default),
]


@pytest.mark.parametrize(("variable", "value", "default_used"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_variable_warns_once_naming_it_and_the_default_is_used(
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    default_used: Callable[[Telemetry], bool],
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")  # nothing listens
    monkeypatch.setenv(variable, value)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        telemetry = configure_telemetry(set_global=False)  # OTLP on: every reader is built
    try:
        ours = [w for w in caught if issubclass(w.category, TelemetrySettingWarning)]
        texts = {str(w.message) for w in ours}
        assert len(texts) == 1, [str(w.message) for w in caught]
        (text,) = texts
        assert text.startswith(f"{variable}={value!r} is not ") and "; using " in text
        assert ours[0].filename == __file__  # points at the caller's line, not the package
        assert default_used(telemetry)
        assert os.environ[variable] == value  # the application's environment is unchanged
    finally:
        telemetry.shutdown(timeout_millis=CLEANUP_MS)


def test_every_sdk_variable_the_setup_guards_is_covered_here() -> None:
    guarded = {setting.variable for setting in SDK_SETTINGS}
    tested = {case[0] for case in CASES}
    # One of each kind is enough for the span limits (one rule, one table entry each).
    limits = {v for v in guarded if v.endswith("_LIMIT")} - tested
    assert guarded - tested - limits == set()


def test_a_good_value_is_not_warned_about_and_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "3.5")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "HTTP/protobuf")
    with warnings.catch_warnings():
        warnings.simplefilter("error", TelemetrySettingWarning)
        telemetry = configure_telemetry(set_global=False, otlp=True)
    try:
        exporter = _exporter(telemetry, "OTLPSpanExporter")
        assert "http" in type(exporter).__module__
        assert exporter._client._timeout == 3.5  # type: ignore[attr-defined]
    finally:
        telemetry.shutdown(timeout_millis=CLEANUP_MS)


def test_an_unused_variable_is_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OTLP exporter, periodic reader or span batches built: their variables are not read,
    so not warned about."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "bogus")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "abc")
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "abc")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "abc")
    with warnings.catch_warnings():
        warnings.simplefilter("error", TelemetrySettingWarning)
        configure_telemetry(set_global=False, otlp=False).shutdown(timeout_millis=CLEANUP_MS)


@pytest.mark.parametrize(
    ("traces", "metrics", "variable"),
    [
        ("otlp", "none", "OTEL_BSP_SCHEDULE_DELAY"),  # the batch span processor alone
        ("none", "console", "OTEL_METRIC_EXPORT_INTERVAL"),  # a periodic reader, no OTLP
        ("none", "otlp", "OTEL_METRIC_EXPORT_INTERVAL"),  # a periodic reader, no span batches
        ("none", "otlp", "OTEL_EXPORTER_OTLP_TIMEOUT"),  # an OTLP exporter, metrics only
    ],
)
def test_the_variables_of_each_component_built_are_checked(
    monkeypatch: pytest.MonkeyPatch, traces: str, metrics: str, variable: str
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", traces)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", metrics)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")  # nothing listens
    monkeypatch.setenv(variable, "abc")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        telemetry = configure_telemetry(set_global=False)
    telemetry.shutdown(timeout_millis=CLEANUP_MS)
    ours = [str(w.message) for w in caught if issubclass(w.category, TelemetrySettingWarning)]
    assert [text.split(" is not ")[0] for text in ours] == [f"{variable}='abc'"]


@pytest.mark.parametrize("value", ["yes", "1", "on"])
def test_a_bad_content_capture_switch_warns_and_keeps_content_in(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
    variable = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
    with pytest.warns(TelemetrySettingWarning, match=f"^{variable}='{value}' is not one of "):
        handler = OTelCallbackHandler(tracer_provider=TracerProvider())
    assert handler.capture_content is False


def test_read_number_names_the_variable_and_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared reader other modules use for their own variables."""
    monkeypatch.setenv("SYMFONIC_OTEL_EXAMPLE_RATIO", "1.5x")
    with pytest.warns(TelemetrySettingWarning, match=r"^SYMFONIC_OTEL_EXAMPLE_RATIO='1.5x'"):
        assert read_number("SYMFONIC_OTEL_EXAMPLE_RATIO", 0.25) == 0.25
    monkeypatch.setenv("SYMFONIC_OTEL_EXAMPLE_RATIO", "0.5")
    assert read_number("SYMFONIC_OTEL_EXAMPLE_RATIO", 0.25) == 0.5
    monkeypatch.setenv("SYMFONIC_OTEL_EXAMPLE_RATIO", "1.5")
    with pytest.warns(TelemetrySettingWarning, match=r"is not a number from 0 to 1; using"):
        assert read_number("SYMFONIC_OTEL_EXAMPLE_RATIO", 0.25, maximum=1.0) == 0.25


@pytest.mark.parametrize("value", ["0", "0.0", "1", "1.0", " 1 "])
def test_a_ratio_at_either_end_of_its_range_is_used_without_a_warning(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """``SYMFONIC_OTEL_HEALTHY_TRACE_RATIO`` takes 0 to 1, both ends included: 1 (keep every
    trace) and 0 (keep only failing runs' traces) are good values, never warned about."""
    monkeypatch.setenv(semconv.HEALTHY_TRACE_RATIO_ENV, value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ratio_from_env(None) == float(value)


def _env(**variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(ROOT)
    return {**env, **variables}


def test_an_application_with_a_bad_timeout_starts_and_says_so_once(tmp_path: Path) -> None:
    """The report's case: the app used to die with "could not convert string to float"."""
    app = tmp_path / "app.py"
    app.write_text(
        "from symfonic_otel import configure_telemetry\n"
        "telemetry = configure_telemetry(otlp=True)\n"
        "print('started')\n"
        "telemetry.shutdown(timeout_millis=300)\n"
    )
    done = subprocess.run(
        [sys.executable, str(app)],
        capture_output=True,
        text=True,
        env=_env(
            OTEL_EXPORTER_OTLP_TIMEOUT="abc", OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9"
        ),
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "started\n"
    named = [line for line in done.stderr.splitlines() if "OTEL_EXPORTER_OTLP_TIMEOUT" in line]
    assert len(named) == 1 and "TelemetrySettingWarning" in named[0], done.stderr
    assert "'abc'" in named[0] and "using the default, 10 s" in named[0]


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "bogus"}, "OTEL_EXPORTER_OTLP_PROTOCOL='bogus'"),
        ({"OTEL_EXPORTER_OTLP_TIMEOUT": "abc"}, "OTEL_EXPORTER_OTLP_TIMEOUT='abc'"),
    ],
)
def test_the_demo_prints_one_line_and_exits_2_on_a_bad_variable(
    tmp_path: Path, variables: dict[str, str], named: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "symfonic_otel", "demo", "--runs", "5", "--otlp"],
        capture_output=True,
        text=True,
        env=_env(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", **variables),
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("symfonic-otel demo: error: ") and named in lines[0]
