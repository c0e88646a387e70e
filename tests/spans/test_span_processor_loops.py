"""Loops from other instrumentations' spans: the call budget, judged when the run's spans end.

Spans without arguments (the default of every GenAI instrumentation) give no repeated tool
calls: only a run past ``runaway_calls`` model calls counts as looping, kind ``call_budget``.
"""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint

from symfonic_otel import semconv
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.loop_support import looping

TOOL_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "name": "add"}]}])
TEXT_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "3"}]}])


def _run(telemetry: InMemoryTelemetry, processor: SilentBailSpanProcessor, calls: int) -> None:
    tracer = telemetry.tracer_provider.get_tracer("peer")
    agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT, semconv.TENANT_ID: "acme"}
    with tracer.start_as_current_span("invoke_agent peer", attributes=agent):
        for index in range(calls):
            last = index == calls - 1
            attrs = {
                semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
                semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",) if last else ("tool_calls",),
                semconv.GEN_AI_OUTPUT_MESSAGES: TEXT_TURN if last else TOOL_TURN,
            }
            with tracer.start_as_current_span("chat m", attributes=attrs):
                pass


def test_the_call_budget_from_spans(telemetry: InMemoryTelemetry) -> None:
    processor = SilentBailSpanProcessor(meter_provider=telemetry.meter_provider, runaway_calls=5)
    telemetry.tracer_provider.add_span_processor(processor)
    _run(telemetry, processor, 5)
    assert looping(telemetry) == 0
    _run(telemetry, processor, 6)
    assert looping(telemetry, semconv.LOOP_CALL_BUDGET, tenant__id="acme") == 1
    points = telemetry.points(semconv.INVOKE_AGENT_INFERENCE_CALLS.name)
    assert sorted(p.sum for _, p in points if isinstance(p, HistogramDataPoint)) == [11]
    assert all(semconv.TENANT_ID not in attrs for attrs, _ in points)
    assert telemetry.points(semconv.INVOKE_AGENT_TOOL_CALLS.name) == []  # not known from spans


def test_the_default_budget_is_fifty(telemetry: InMemoryTelemetry) -> None:
    processor = SilentBailSpanProcessor(meter_provider=telemetry.meter_provider)
    telemetry.tracer_provider.add_span_processor(processor)
    _run(telemetry, processor, 50)
    assert looping(telemetry) == 0
    _run(telemetry, processor, 51)
    assert looping(telemetry, semconv.LOOP_CALL_BUDGET) == 1


@pytest.mark.parametrize(("option", "value"), [("runaway_calls", 0), ("loop_threshold", "3")])
def test_bad_options_name_the_argument(option: str, value: object) -> None:
    with pytest.raises(ValueError, match=option):
        SilentBailSpanProcessor(**{option: value})  # type: ignore[arg-type]
