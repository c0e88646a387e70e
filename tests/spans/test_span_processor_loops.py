"""Loops from other instrumentations' spans: the call budget, judged when the run's spans end.

Spans without arguments (the default of every GenAI instrumentation) give no repeated tool
calls: only a run past ``runaway_calls`` model calls counts as looping, kind ``call_budget``.
With content capture on, tool spans carry their arguments, and a run with ``loop_threshold``
identical tool calls counts as looping (``repeated_tool_call``), judged at the run's end, with
the real instrumentations (OpenLLMetry, OpenInference, util-genai, Pydantic AI).
"""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint

from symfonic_otel import semconv
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.loop_support import looping, repeated
from tests.support.span_processor_support import (
    ANSWER,
    CAP_RAISED,
    LANGCHAIN_INSTRUMENTATIONS,
    LOOP,
    PYDANTIC_AI,
    UTIL_GENAI,
    rig,
)

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


# --- repeated identical tool calls, from the real instrumentations' tool spans -------------------

ALL_RIGS = (*LANGCHAIN_INSTRUMENTATIONS, PYDANTIC_AI)


@pytest.mark.parametrize("name", ALL_RIGS)
def test_identical_tool_calls_from_spans_with_content_count_one_looping_run(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three ``add(a=1, b=1)`` calls, then an answer: one looping run, two repeats; the run's
    tool spans' arguments reach no metric label."""
    with rig(name, True, monkeypatch) as made:
        made.run(LOOP, "acme")
        memory = made.memory
        assert looping(memory, semconv.LOOP_REPEATED_TOOL_CALL, tenant__id="acme") == 1
        assert looping(memory, semconv.LOOP_CALL_BUDGET) == 0
        assert repeated(memory, tenant__id="acme") == 2
        made.run(ANSWER, "acme")  # one tool call: no loop, no repeat
        assert looping(memory) == 1 and repeated(memory) == 2
        for metric in memory.metrics().values():
            for point in metric.data.data_points:
                assert '"a"' not in repr(dict(point.attributes or {}))


@pytest.mark.parametrize("name", ALL_RIGS)
def test_without_content_tool_spans_give_no_repeats(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Capture off: the spans carry no arguments (OpenInference writes ``__REDACTED__``, the
    same for every call: it must not read as one repeated call)."""
    with rig(name, False, monkeypatch) as made:
        made.run(LOOP, "acme")
        assert looping(made.memory) == 0
        assert repeated(made.memory) == 0


@pytest.mark.parametrize("name", ALL_RIGS)
def test_different_arguments_are_no_loop(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The step-cap scenario calls ``add`` with a new argument every time (LangChain rigs); the
    Pydantic AI one repeats its call: three repeats at the request limit."""
    with rig(name, True, monkeypatch) as made:
        made.run(CAP_RAISED, "acme")
        expected = 1 if name == PYDANTIC_AI else 0
        assert looping(made.memory, semconv.LOOP_REPEATED_TOOL_CALL) == expected


def test_the_threshold_option_applies_to_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    with rig(UTIL_GENAI, True, monkeypatch, loop_threshold=4) as made:
        made.run(LOOP, "acme")
        assert looping(made.memory) == 0
        assert repeated(made.memory, tenant__id="acme") == 2
