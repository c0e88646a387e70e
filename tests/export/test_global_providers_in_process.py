"""``configure_telemetry``'s global providers, in process: set once, reported, warned about.

OpenTelemetry lets a process set its global providers once. The fixture gives each test a
process state with none set yet (OpenTelemetry's own "set once" guards, fresh) and puts the
real state back after, so the global path runs here with the real API and SDK. The caller's
line of the second configuration's warning is checked in a fresh interpreter
(``test_setup_mistakes.py``).
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.metrics import _internal as metrics_internal
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.util._once import Once
from structlog.testing import capture_logs

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.emit import tenant_hub
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.export.setup import configure_telemetry

pytestmark = pytest.mark.usefixtures("clean_otel_and_symfonic_env", "no_global_providers")

NOT_GLOBAL = (
    "configure_telemetry(): the OpenTelemetry global providers were already set (an earlier "
    "configure_telemetry or another SDK setup), so this configuration is NOT global: handlers "
    "built without providers keep using the first one. Configure once per process, or pass "
    "set_global=False and give telemetry.tracer_provider / meter_provider to the handlers."
)
HINT = (
    "OpenTelemetry allows setting the global providers once per process; pass "
    "telemetry.tracer_provider / meter_provider to handlers explicitly"
)


@pytest.fixture
def no_global_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process whose OpenTelemetry globals were never set (restored after the test)."""
    monkeypatch.setattr(trace, "_TRACER_PROVIDER_SET_ONCE", Once())
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    monkeypatch.setattr(trace, "_PROXY_TRACER_PROVIDER", trace.ProxyTracerProvider())
    monkeypatch.setattr(metrics_internal, "_METER_PROVIDER_SET_ONCE", Once())
    monkeypatch.setattr(metrics_internal, "_METER_PROVIDER", None)
    monkeypatch.setattr(
        metrics_internal, "_PROXY_METER_PROVIDER", metrics_internal._ProxyMeterProvider()
    )
    monkeypatch.setattr(tenant_hub, "_pending", tenant_hub._PendingHub())


def _lines(logs: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [line for line in logs if line["event"] == f"symfonic_otel.{event}"]


def _runs(reader: InMemoryMetricReader) -> float:
    data = reader.get_metrics_data()
    return sum(
        point.value
        for resource in (data.resource_metrics if data else ())
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == semconv.AGENT_RUNS.name
        for point in metric.data.data_points
    )


def test_by_default_the_first_configuration_becomes_the_global_providers() -> None:
    with warnings.catch_warnings(record=True) as caught, capture_logs() as logs:
        warnings.simplefilter("always")
        telemetry = configure_telemetry(otlp=False)
    try:
        assert telemetry.is_global
        assert trace.get_tracer_provider() is telemetry.tracer_provider
        assert metrics.get_meter_provider() is telemetry.meter_provider
        assert not caught, [str(w.message) for w in caught]
        assert not _lines(logs, "global_providers_already_set")
        [line] = _lines(logs, "telemetry_configured")
        assert line["is_global"] is True
    finally:
        telemetry.shutdown(timeout_millis=1_000)


def test_a_second_global_configuration_warns_and_stays_local() -> None:
    first = configure_telemetry(otlp=False)
    try:
        with pytest.warns(RuntimeWarning) as caught, capture_logs() as logs:
            second = configure_telemetry(otlp=False)
        second.shutdown(timeout_millis=1_000)
        assert [str(w.message) for w in caught] == [NOT_GLOBAL]
        assert _lines(logs, "global_providers_already_set") == [
            {
                "event": "symfonic_otel.global_providers_already_set",
                "log_level": "warning",
                "hint": HINT,
            }
        ]
        [line] = _lines(logs, "telemetry_configured")
        assert line["is_global"] is False
        assert not second.is_global
        assert trace.get_tracer_provider() is first.tracer_provider
        assert metrics.get_meter_provider() is first.meter_provider
    finally:
        first.shutdown(timeout_millis=1_000)


@pytest.mark.parametrize("signal", ["traces", "metrics"])
def test_a_configuration_is_not_global_when_either_global_provider_was_set_before(
    signal: str,
) -> None:
    """Another SDK setup that set only one signal's provider: the configuration is local."""
    if signal == "traces":
        trace.set_tracer_provider(TracerProvider(shutdown_on_exit=False))
    else:
        metrics.set_meter_provider(MeterProvider(shutdown_on_exit=False))
    with pytest.warns(RuntimeWarning), capture_logs():
        telemetry = configure_telemetry(otlp=False)
    telemetry.shutdown(timeout_millis=1_000)
    assert telemetry.is_global is False


def test_a_local_configuration_leaves_the_globals_unset() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        telemetry = configure_telemetry(otlp=False, set_global=False)
    telemetry.shutdown(timeout_millis=1_000)
    assert telemetry.is_global is False
    assert not caught
    assert trace.get_tracer_provider() is not telemetry.tracer_provider
    assert metrics.get_meter_provider() is not telemetry.meter_provider


def test_a_handler_built_before_the_global_configuration_is_in_its_first_collection() -> None:
    handler = OTelCallbackHandler(agent_name="early", tenant_id="acme")
    handler.agent_start(AgentStartEvent("q", "run-1"))
    handler.agent_end(AgentEndEvent("run-1", "answer", 1.0, 1))
    reader = InMemoryMetricReader()
    telemetry = configure_telemetry(otlp=False, metric_readers=[reader])
    try:
        assert _runs(reader) == 1
    finally:
        telemetry.shutdown(timeout_millis=1_000)


def test_the_global_shutdown_closes_the_runs_of_handlers_built_without_providers() -> None:
    handler = OTelCallbackHandler(agent_name="early", tenant_id="acme")
    telemetry = configure_telemetry(otlp=False)
    handler.agent_start(AgentStartEvent("q", "run-open"))
    with capture_logs() as logs:
        telemetry.shutdown(timeout_millis=1_000)
    assert not handler.is_open("run-open")
    [line] = _lines(logs, "telemetry_shutdown")
    assert line["abandoned_runs"] == 1
