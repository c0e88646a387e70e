"""Per-tenant call-count histograms name each run's outcome, so a dashboard can split the
model calls of failed runs from those of completed ones."""

from __future__ import annotations

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

CALLS = semconv.INVOKE_AGENT_INFERENCE_CALLS.name


def test_a_tenant_s_call_counts_carry_the_run_outcome(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(tenant_histograms=True)
    with tenant_scope("acme"):
        handler.agent_start(AgentStartEvent("q", "r0"))
        handler.llm_end(LLMEndEvent("gpt-4o", "x", {}, run_id="r0"))
        handler.agent_end(AgentEndEvent("r0", "an answer", 10.0, 1))
    outcomes = {
        (attributes.get(semconv.TENANT_ID), attributes.get(semconv.RUN_OUTCOME))
        for attributes, _ in telemetry.points(CALLS)
    }
    assert outcomes == {("acme", "completed")}
