"""Whatever attributes and events other instrumentations put on their spans, the span processor
never raises, never drops an event as an internal error, and judges each run exactly once."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symfonic_otel import semconv
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry

KEYS = (
    semconv.GEN_AI_OPERATION_NAME,
    semconv.GEN_AI_RESPONSE_FINISH_REASONS,
    semconv.GEN_AI_OUTPUT_MESSAGES,
    semconv.OPENINFERENCE_SPAN_KIND,
    semconv.OPENINFERENCE_FINISH_REASON,
    f"{semconv.OPENINFERENCE_OUTPUT_MESSAGES}0.message.content",
    f"{semconv.OPENINFERENCE_OUTPUT_MESSAGES}0.message.role",
    semconv.OPENINFERENCE_OUTPUT_VALUE,
    semconv.OPENINFERENCE_OUTPUT_MIME_TYPE,
    semconv.TRACELOOP_SPAN_KIND,
    semconv.TRACELOOP_REQUEST_TYPE,
    f"{semconv.TRACELOOP_COMPLETIONS}0.content",
    f"{semconv.TRACELOOP_COMPLETIONS}0.finish_reason",
    semconv.PYDANTIC_AI_FINAL_RESULT,
    semconv.ERROR_TYPE,
    semconv.TENANT_ID,
)
WORDS = st.sampled_from(
    [
        "chat",
        "invoke_agent",
        "invoke_workflow",
        "LLM",
        "AGENT",
        "CHAIN",
        "workflow",
        "tool_calls",
        "stop",
        "",
        " ",
        "GraphRecursionError",
        "text/plain",
        "[]",
        '[{"parts": [{"type": "text", "content": ""}]}]',
        '[{"parts": [{"type": "tool_call"}]}]',
        "{",
        "\x00\udcff",
    ]
)
SCALARS = st.one_of(
    WORDS, st.text(max_size=20), st.integers(), st.floats(allow_nan=True), st.booleans()
)
VALUES = st.one_of(SCALARS, st.lists(WORDS, max_size=3).map(tuple))
ATTRIBUTES = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6)
# One trace: a root and a few children, each with random attributes and maybe an event.
TRACES = st.tuples(ATTRIBUTES, st.lists(st.tuples(ATTRIBUTES, st.booleans()), max_size=5))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces=st.lists(TRACES, min_size=1, max_size=4))
def test_random_spans_never_fail_the_processor(traces: list[Any]) -> None:
    memory = InMemoryTelemetry()
    processor = SilentBailSpanProcessor(meter_provider=memory.meter_provider, max_traces=2)
    memory.tracer_provider.add_span_processor(processor)
    tracer = memory.tracer_provider.get_tracer("fuzz")
    try:
        for root_attributes, children in traces:
            with tracer.start_as_current_span("root", attributes=root_attributes):
                for attributes, with_event in children:
                    with tracer.start_as_current_span("child", attributes=attributes) as span:
                        if with_event:
                            span.add_event(semconv.EXCEPTION_EVENT, {semconv.EXCEPTION_TYPE: "X.Y"})
        assert processor.open_traces == 0
        assert memory.value(semconv.DROPPED_EVENTS.name) == 0
        # A run is one agent invocation, not one trace: sibling agent spans are runs of their
        # own, so the bound is one run per span (each judged once), not one per trace.
        spans = sum(1 + len(children) for _, children in traces)
        assert memory.value(semconv.AGENT_RUNS.name) <= spans
        assert memory.value(semconv.SILENT_BAILS.name) <= memory.value(semconv.AGENT_RUNS.name)
    finally:
        memory.shutdown()
