"""``choose_exporters``, the rule of ``export.selection`` applied to arguments and variables,
checked case by case without building anything (``test_exporter_choice_in_process.py`` and
``test_configure_telemetry_options_and_defaults.py`` prove it through ``configure_telemetry``)."""

from __future__ import annotations

import pytest

from symfonic_otel.export.selection import ExporterChoice, choose_exporters

pytestmark = pytest.mark.usefixtures("clean_otel_env")


def _choice(*, otlp: bool | None = None, console: bool = False, prometheus: bool) -> ExporterChoice:
    return choose_exporters(otlp=otlp, console=console, prometheus=prometheus)


@pytest.mark.parametrize("otlp", [True, False])
@pytest.mark.parametrize("console", [True, False])
def test_a_forced_otlp_applies_to_both_signals_whatever_the_variables(
    monkeypatch: pytest.MonkeyPatch, otlp: bool, console: bool
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
    assert _choice(otlp=otlp, console=console, prometheus=True) == ExporterChoice(
        otlp, console, otlp, console
    )


def test_without_a_prometheus_port_both_signals_go_over_otlp() -> None:
    assert _choice(prometheus=False) == ExporterChoice(True, False, True, False)


def test_with_a_prometheus_port_and_no_endpoint_nothing_is_pushed() -> None:
    assert _choice(prometheus=True) == ExporterChoice(False, False, False, False)


def test_a_blank_endpoint_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "  ")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "")
    assert _choice(prometheus=True) == ExporterChoice(False, False, False, False)


@pytest.mark.parametrize(
    ("variable", "expected"),
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", ExporterChoice(True, False, False, False)),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ExporterChoice(True, False, False, False)),
        ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", ExporterChoice(False, False, True, False)),
    ],
)
def test_with_a_prometheus_port_an_endpoint_names_the_signal_it_pushes(
    monkeypatch: pytest.MonkeyPatch, variable: str, expected: ExporterChoice
) -> None:
    monkeypatch.setenv(variable, "http://collector:4317")
    assert _choice(prometheus=True) == expected


def test_the_console_argument_adds_to_what_the_variables_choose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    assert _choice(console=True, prometheus=False) == ExporterChoice(True, True, False, True)


def test_each_signal_follows_its_own_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp,console")
    assert _choice(prometheus=True) == ExporterChoice(False, True, True, True)
