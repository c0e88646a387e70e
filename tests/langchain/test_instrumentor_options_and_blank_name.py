"""What ``instrument()`` and the environment hand the instrumentor's handler: every handler
option given is passed on, and a blank agent-name variable is unset, not a bad value."""

from __future__ import annotations

import warnings

import pytest

from symfonic_otel import semconv
from symfonic_otel.instrumentation import SymfonicLangChainInstrumentor
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def test_every_handler_option_given_to_instrument_reaches_the_handler(
    telemetry: InMemoryTelemetry,
) -> None:
    instrumentor = SymfonicLangChainInstrumentor()
    instrumentor.instrument(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        tenant_histograms=True,
        tenant_from_baggage=True,
        max_open_runs=3,
        tenant_id="acme",
    )
    try:
        callback = instrumentor.callback_handler
        assert callback is not None
        core = telemetry.track(callback.handler)._core
        assert core.metrics.tenant_histograms is True
        assert core.tenant_from_baggage is True
        assert core.runs._max_open == 3
        assert core.tenant_default == "acme"
    finally:
        instrumentor.uninstrument()


@pytest.mark.parametrize("blank", ["   ", "\t"])
def test_a_blank_agent_name_variable_is_unset_without_a_warning(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, blank: str
) -> None:
    monkeypatch.setenv(semconv.AGENT_NAME_ENV, blank)
    instrumentor = SymfonicLangChainInstrumentor()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        instrumentor.instrument(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
    try:
        callback = instrumentor.callback_handler
        assert callback is not None
        assert telemetry.track(callback.handler).agent_name == "symfonic"
    finally:
        instrumentor.uninstrument()
