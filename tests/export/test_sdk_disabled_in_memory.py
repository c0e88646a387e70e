"""``OTEL_SDK_DISABLED=true`` through in-memory readers: no span, no metric point, no per-tenant
series, with the switch off every one of them (the live test checks the console, ``/metrics``
and OTLP; this guards the switch itself in the fast lane)."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from symfonic_otel import OTelCallbackHandler, configure_telemetry, semconv, tenant_scope
from symfonic_otel.emit.tenant_counters import TENANT_COUNTER_NAMES
from symfonic_otel.events import AgentEndEvent, AgentStartEvent


@pytest.mark.parametrize("disabled", [True, False])
def test_the_sdks_off_switch_turns_every_signal_of_ours_off(
    monkeypatch: pytest.MonkeyPatch, disabled: bool
) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true" if disabled else "false")
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    telemetry = configure_telemetry(
        otlp=False,
        set_global=False,
        span_processors=[SimpleSpanProcessor(spans)],
        metric_readers=[reader],
    )
    try:
        handler = OTelCallbackHandler(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
        with tenant_scope("acme"):
            handler.agent_start(AgentStartEvent("q", "r1"))
            handler.agent_end(AgentEndEvent("r1", "", 10.0, 1))  # a blank answer: a bail
        data = reader.get_metrics_data()
        names = {
            metric.name
            for resource_metrics in (data.resource_metrics if data else ())
            for scope_metrics in resource_metrics.scope_metrics
            for metric in scope_metrics.metrics
            if metric.data.data_points
        }
        tenant_series = names & TENANT_COUNTER_NAMES
        if disabled:
            assert (spans.get_finished_spans(), names, tenant_series) == ((), set(), set())
        else:
            assert [s.name for s in spans.get_finished_spans()] == ["invoke_agent symfonic"]
            assert {semconv.AGENT_RUNS.name, semconv.SILENT_BAILS.name} <= tenant_series
            assert semconv.AGENT_DURATION.name in names
    finally:
        telemetry.shutdown()
