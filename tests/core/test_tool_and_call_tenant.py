"""The tenant of an adapter's tool and generic call: one of a known run is its run's tenant
whatever tenant the adapter names (the hint is for spans of no run)."""

from __future__ import annotations

from opentelemetry.trace import set_span_in_context

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def _tenant(telemetry: InMemoryTelemetry, name: str) -> object:
    return (telemetry.span(name).attributes or {}).get(semconv.TENANT_ID)


def test_a_tool_and_a_call_of_a_run_are_the_run_s_tenant(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r1"), tenant_id="acme")
    tool = handler.start_tool("r1", "lookup", call_id="c1", tenant_id="globex")
    handler.end_tool(tool)
    call = handler.start_call("retrieval", "retrieval docs", run_id="r1", tenant_id="globex")
    handler.end_call(call)
    handler.agent_end(AgentEndEvent("r1", "hi", 1.0, 1))
    assert _tenant(telemetry, "execute_tool lookup") == "acme"
    assert _tenant(telemetry, "retrieval docs") == "acme"


def test_a_tool_and_a_call_of_no_run_are_the_tenant_the_adapter_names(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    outer = telemetry.tracer_provider.get_tracer("app").start_span("app")
    parent = set_span_in_context(outer)
    tool = handler.start_tool("unknown", "lookup", parent=parent, tenant_id="globex")
    handler.end_tool(tool)
    call = handler.start_call("retrieval", "retrieval docs", parent=parent, tenant_id="globex")
    handler.end_call(call)
    outer.end()
    assert _tenant(telemetry, "execute_tool lookup") == "globex"
    assert _tenant(telemetry, "retrieval docs") == "globex"
