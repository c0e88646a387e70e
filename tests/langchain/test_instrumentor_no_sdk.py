"""The instrumentor says once, in a log line, when it is loaded with no OpenTelemetry SDK."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NoOpTracerProvider
from structlog.testing import capture_logs

from symfonic_otel import instrumentation
from symfonic_otel.instrumentation import SymfonicLangChainInstrumentor

LINE = "symfonic_otel.instrumentor_without_sdk"


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[SymfonicLangChainInstrumentor]:
    monkeypatch.setattr(instrumentation, "_said_no_sdk", False)
    instrumentor = SymfonicLangChainInstrumentor()
    yield instrumentor
    instrumentor.uninstrument()


def _lines(logs: list[dict[str, object]]) -> list[dict[str, object]]:
    return [line for line in logs if line["event"] == LINE]


def test_no_sdk_is_said_once_with_the_fix(fresh: SymfonicLangChainInstrumentor) -> None:
    no_sdk = {"tracer_provider": NoOpTracerProvider(), "meter_provider": NoOpMeterProvider()}
    with capture_logs() as logs:
        fresh.instrument(**no_sdk)
        fresh.uninstrument()
        fresh.instrument(**no_sdk)  # loaded again: no second line
    lines = _lines(logs)
    assert len(lines) == 1
    assert lines[0]["log_level"] == "warning"
    assert "opentelemetry-distro" in str(lines[0]["hint"])
    assert "configure_telemetry" in str(lines[0]["hint"])


def test_an_sdk_provider_says_nothing(fresh: SymfonicLangChainInstrumentor) -> None:
    provider = TracerProvider()
    with capture_logs() as logs:
        fresh.instrument(tracer_provider=provider, meter_provider=NoOpMeterProvider())
    assert _lines(logs) == []
    provider.shutdown()
