"""Where the handler puts a run's span and a call's span in the trace: a run goes under the
parent its adapter names, even when another span is current; a model call of no known run and
no named parent starts a trace of its own, never under whatever span happens to be current."""

from __future__ import annotations

from opentelemetry import trace

from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def test_a_run_goes_under_the_parent_its_adapter_names(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    tracer = telemetry.tracer_provider.get_tracer("app")
    named = tracer.start_span("graph node")
    with tracer.start_as_current_span("unrelated request"):
        handler.agent_start(AgentStartEvent("q", "r1"), parent=trace.set_span_in_context(named))
        handler.agent_end(AgentEndEvent("r1", "answer", 1.0, 1))
    named.end()
    (run,) = [span for span in telemetry.spans() if span.name.startswith("invoke_agent")]
    assert run.parent is not None
    assert run.parent.span_id == named.get_span_context().span_id
    assert run.context.trace_id == named.get_span_context().trace_id


def test_a_call_of_no_known_run_and_no_parent_starts_its_own_trace(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    tracer = telemetry.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("unrelated request") as current:
        handler.llm_end(LLMEndEvent(model="x", output="hi", usage={}, run_id=""))
    (call,) = [span for span in telemetry.spans() if span.name != "unrelated request"]
    assert call.parent is None
    assert call.context.trace_id != current.get_span_context().trace_id
