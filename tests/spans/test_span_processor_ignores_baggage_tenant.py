"""Runs read from other instrumentations' spans never take their tenant from baggage.

Baggage arrives in request headers any client can write; the span processor has no option to
trust it, so a run with no tenant on its spans is the processor's ``tenant_id`` (or
``unknown``) even when the request's baggage names another tenant.
"""

from __future__ import annotations

import pytest
from opentelemetry import baggage, context
from opentelemetry.sdk.trace import TracerProvider

from symfonic_otel import semconv
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry


@pytest.mark.parametrize("tenant_id", [None, "acme"], ids=["no-default", "default"])
def test_a_baggage_tenant_is_never_a_peer_runs_tenant(tenant_id: str | None) -> None:
    memory = InMemoryTelemetry()
    token = context.attach(baggage.set_baggage(semconv.BAGGAGE_TENANT_KEY, "mallory"))
    try:
        provider = TracerProvider()
        processor = SilentBailSpanProcessor(
            meter_provider=memory.meter_provider, tenant_id=tenant_id
        )
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("peer-instrumentation")
        agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
        chat = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
            semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",),
        }
        with (
            tracer.start_as_current_span("invoke_agent peer", attributes=agent),
            tracer.start_as_current_span("chat peer-model", attributes=chat),
        ):
            pass
        provider.shutdown()
        expected = tenant_id or semconv.TENANT_UNKNOWN
        runs = {
            tenant: memory.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: tenant})
            for tenant in (expected, "mallory")
        }
        assert runs == {expected: 1, "mallory": 0}
    finally:
        context.detach(token)
        memory.shutdown()
