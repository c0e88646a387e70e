"""The tenant on an adapter tool's duration series (``tenant_histograms=True``) is its run's,
as on its span, whatever tenant the adapter names; with no run it is the adapter's."""

from __future__ import annotations

from opentelemetry.trace import set_span_in_context

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

TOOL_DURATION = semconv.EXECUTE_TOOL_DURATION.name


def _tenants(telemetry: InMemoryTelemetry) -> list[object]:
    return [attrs.get(semconv.TENANT_ID) for attrs, _ in telemetry.points(TOOL_DURATION)]


def test_a_tool_of_a_run_is_measured_under_the_run_s_tenant(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(tenant_histograms=True)
    handler.agent_start(AgentStartEvent("q", "r1"), tenant_id="acme")
    handler.end_tool(handler.start_tool("r1", "lookup", call_id="c1", tenant_id="globex"))
    handler.agent_end(AgentEndEvent("r1", "answer", 10.0, 1))
    assert _tenants(telemetry) == ["acme"]


def test_a_tool_of_no_run_is_measured_under_the_adapter_s_tenant(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(tenant_histograms=True, tenant_id="fallback")
    outer = telemetry.tracer_provider.get_tracer("app").start_span("app")
    tool = handler.start_tool(
        "gone", "lookup", parent=set_span_in_context(outer), tenant_id="globex"
    )
    handler.end_tool(tool)
    outer.end()
    assert _tenants(telemetry) == ["globex"]
