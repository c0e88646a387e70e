"""A run whose extra attributes name a sub-agent is that agent's run: its span is named for it
and carries both the caller's attributes and the handler's own."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from symfonic_otel import semconv
from symfonic_otel.emit.spans import SpanEmitter


def test_a_sub_agent_name_renames_the_run_span_and_keeps_every_attribute() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    emitter = SpanEmitter(provider.get_tracer("test"), "planner", capture_content=False)
    extra = {semconv.GEN_AI_AGENT_NAME: " researcher ", "app.step": "lookup"}
    emitter.start_run("r1", "acme", "q", None, None, extra).end()
    (span,) = exporter.get_finished_spans()
    assert span.name == semconv.agent_span_name("researcher")
    attributes = dict(span.attributes or {})
    assert attributes[semconv.GEN_AI_AGENT_NAME] == "researcher"
    assert attributes["app.step"] == "lookup"
    assert attributes[semconv.RUN_ID] == "r1"
    assert attributes[semconv.TENANT_ID] == "acme"
