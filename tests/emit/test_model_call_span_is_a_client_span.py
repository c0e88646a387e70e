"""A model call's span is a CLIENT span (the GenAI conventions: the agent calls a remote model),
so trace backends draw it as an outbound call."""

from __future__ import annotations

from opentelemetry.trace import SpanKind

from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def test_the_chat_span_has_client_kind(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    handler.llm_end(LLMEndEvent(model="gpt-4o", output="x", usage={}, run_id="r"))
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    assert telemetry.span("chat gpt-4o").kind is SpanKind.CLIENT
