"""The agent-name variable under ``opentelemetry-instrument``: a name is cleaned of control
characters before use, one that cleans to nothing warns and leaves the default, and only
``node_spans=True`` itself turns node spans on (a distro's stray truthy value does not)."""

from __future__ import annotations

import warnings

import pytest

from symfonic_otel import semconv
from symfonic_otel.environment import TelemetrySettingWarning
from symfonic_otel.instrumentation import SymfonicLangChainInstrumentor
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def _instrumented_name(telemetry: InMemoryTelemetry, **options: object) -> tuple[str, bool]:
    instrumentor = SymfonicLangChainInstrumentor()
    instrumentor.instrument(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        **options,
    )
    try:
        callback = instrumentor.callback_handler
        assert callback is not None
        node_spans = callback._translate._node_spans
        return telemetry.track(callback.handler).agent_name, node_spans
    finally:
        instrumentor.uninstrument()


def test_the_agent_name_variable_is_cleaned_of_control_characters(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(semconv.AGENT_NAME_ENV, " a\x07gent ")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _instrumented_name(telemetry)[0] == "agent"


def test_an_agent_name_variable_that_cleans_to_nothing_warns_and_keeps_the_default(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(semconv.AGENT_NAME_ENV, "\x07\x08")
    with pytest.warns(TelemetrySettingWarning, match=semconv.AGENT_NAME_ENV):
        assert _instrumented_name(telemetry)[0] == "symfonic"


@pytest.mark.parametrize(("given", "on"), [(True, True), ("yes", False), (1, False)])
def test_only_node_spans_true_turns_node_spans_on(
    telemetry: InMemoryTelemetry, given: object, on: bool
) -> None:
    assert _instrumented_name(telemetry, node_spans=given)[1] is on
