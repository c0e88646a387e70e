"""Spans handed to the span processor more than once, and out of order: one run per agent span,
judged the same way, and nothing left open.

The spans of real runs are recorded once (another instrumentation's tracer on a plain provider),
then delivered to a fresh processor as a batching exporter or a retrying pipeline might hand
them over: each span one to three times, the copies anywhere after the first delivery; or in
any order at all.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from symfonic_otel import semconv
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry

TOOL_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "name": "add"}]}])
TEXT_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "4"}]}])
# Each scenario: its model turns (finish reason, output), and whether it is a silent bail.
SCENARIOS = {
    "bail": ([("tool_calls", TOOL_TURN)], 1),
    "answer": ([("tool_calls", TOOL_TURN), ("stop", TEXT_TURN)], 0),
}


def _recorded(scenario: str) -> list[ReadableSpan]:
    """The ended spans of one run of ``scenario``, in the order they ended (root last)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("peer-instrumentation")
    attributes = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT, "tenant_id": "acme"}
    with tracer.start_as_current_span("invoke_agent peer", attributes=attributes):
        for finish, output in SCENARIOS[scenario][0]:
            with tracer.start_as_current_span(
                "chat peer-model",
                attributes={
                    semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
                    semconv.GEN_AI_RESPONSE_FINISH_REASONS: (finish,),
                    semconv.GEN_AI_OUTPUT_MESSAGES: output,
                },
            ):
                pass
    provider.shutdown()
    return list(exporter.get_finished_spans())


RECORDED = {scenario: _recorded(scenario) for scenario in SCENARIOS}


def _deliver(spans: list[ReadableSpan]) -> tuple[float, float, int]:
    """Runs and bails counted, and traces left open, once ``spans`` reached a fresh processor."""
    memory = InMemoryTelemetry()
    try:
        processor = SilentBailSpanProcessor(meter_provider=memory.meter_provider)
        for span in spans:
            processor.on_end(span)
        return (
            memory.value(semconv.AGENT_RUNS.name),
            memory.value(semconv.SILENT_BAILS.name),
            processor.open_traces,
        )
    finally:
        memory.shutdown()


@st.composite
def with_copies(draw: Any, spans: list[ReadableSpan]) -> list[ReadableSpan]:
    """``spans`` in their order, each delivered again up to twice, later, anywhere."""
    order = list(spans)
    for span in spans:
        for _ in range(draw(st.integers(min_value=0, max_value=2))):
            first = order.index(span)
            order.insert(draw(st.integers(min_value=first + 1, max_value=len(order))), span)
    return order


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(sorted(SCENARIOS)).flatmap(
        lambda s: st.tuples(st.just(s), with_copies(RECORDED[s]))
    )
)
def test_spans_delivered_again_count_one_run_judged_as_once(case: tuple[str, Any]) -> None:
    scenario, delivered = case
    assert _deliver(delivered) == (1, SCENARIOS[scenario][1], 0)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(sorted(SCENARIOS)).flatmap(
        lambda s: st.tuples(st.just(s), st.permutations(RECORDED[s]))
    )
)
def test_spans_in_any_order_count_one_run_at_most_and_leave_nothing_open(
    case: tuple[str, Any],
) -> None:
    scenario, delivered = case
    runs, bails, open_traces = _deliver(list(delivered))
    assert runs == 1
    assert bails <= runs
    if delivered[-1].parent is None:  # the root last: every model call was seen before it
        assert bails == SCENARIOS[scenario][1]
    assert open_traces == 0
