"""The tenant of a run read from other instrumentations' spans: the first span that names one
wins, and a span ending later under the same attribute never relabels the run.

Spans end from the inside out, so the first tenant found is the innermost one (the model call
the application tagged); an outer span carrying the same attribute with another value (a
gateway span around the request, a shared worker's default) must not take the run over.
"""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider

from symfonic_otel import semconv
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def _runs_by_tenant(inner: str, outer: str) -> dict[str, float]:
    memory = InMemoryTelemetry()
    try:
        provider = TracerProvider()
        provider.add_span_processor(SilentBailSpanProcessor(meter_provider=memory.meter_provider))
        tracer = provider.get_tracer("peer-instrumentation")
        agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT, semconv.TENANT_ID: outer}
        chat = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
            semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",),
            semconv.TENANT_ID: inner,
        }
        with (
            tracer.start_as_current_span("invoke_agent peer", attributes=agent),
            tracer.start_as_current_span("chat peer-model", attributes=chat),
        ):
            pass
        provider.shutdown()
        return {
            tenant: memory.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: tenant})
            for tenant in (inner, outer)
        }
    finally:
        memory.shutdown()


def test_the_first_span_naming_a_tenant_keeps_the_run_when_a_later_one_names_another() -> None:
    assert _runs_by_tenant("acme", "globex") == {"acme": 1, "globex": 0}


def test_the_tenant_found_first_wins_whichever_value_it_has() -> None:
    assert _runs_by_tenant("globex", "acme") == {"globex": 1, "acme": 0}
