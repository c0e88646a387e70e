"""The framework adapters on their real frameworks: each records a run's duration in seconds
against a known elapsed time, each option reaches the part it configures, and an interrupt of
the run passes through the adapter untouched."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest
from agents import Agent, Runner, function_tool, set_trace_processors
from opentelemetry.sdk.metrics.export import HistogramDataPoint
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from symfonic_otel import semconv
from symfonic_otel.openai_agents import SymfonicTracingProcessor
from symfonic_otel.pydantic_ai import SymfonicCapability
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.openai_agents_support import ScriptedModel

PAUSE_S = 0.2
SLOW = 'call:slow_lookup:{"q": "weather"}'
QUICK = 'call:lookup:{"q": "weather"}'
RUNS = semconv.AGENT_RUNS.name


def _run_seconds(telemetry: InMemoryTelemetry) -> float:
    [(_, point)] = telemetry.points(semconv.AGENT_DURATION.name)
    assert isinstance(point, HistogramDataPoint)
    return point.sum


@function_tool
def slow_lookup(q: str) -> str:
    """Look something up, slowly."""
    time.sleep(PAUSE_S)
    return f"result for {q}"


@function_tool
def lookup(q: str) -> str:
    """Look something up (where the time a tool takes does not matter)."""
    return f"result for {q}"


def _agents_run(
    processor: SymfonicTracingProcessor, model: ScriptedModel, tool: Any = slow_lookup
) -> None:
    set_trace_processors([processor])
    try:
        agent = Agent(name="helper", model=model, tools=[tool])
        Runner.run_sync(agent, "What is the weather?", max_turns=10)
    finally:
        set_trace_processors([])


def _spans_of(telemetry: InMemoryTelemetry, operation: str) -> list[Any]:
    return [
        s
        for s in telemetry.spans()
        if (s.attributes or {}).get(semconv.GEN_AI_OPERATION_NAME) == operation
    ]


# --- OpenAI Agents SDK ------------------------------------------------------------------------


def test_openai_agents_run_duration_is_in_seconds(telemetry: InMemoryTelemetry) -> None:
    processor = SymfonicTracingProcessor(handler=telemetry.handler())
    _agents_run(processor, ScriptedModel([SLOW, "It is sunny."]))
    assert PAUSE_S <= _run_seconds(telemetry) < PAUSE_S + 5


def test_openai_agents_max_spans_per_run_reaches_the_run_index(
    telemetry: InMemoryTelemetry,
) -> None:
    tools = semconv.OP_EXECUTE_TOOL
    roomy = SymfonicTracingProcessor(handler=telemetry.handler())
    _agents_run(roomy, ScriptedModel([QUICK, QUICK, QUICK, "done"]), lookup)
    assert len(_spans_of(telemetry, tools)) == 3
    telemetry.exporter.clear()
    tight = SymfonicTracingProcessor(handler=telemetry.handler(), max_spans_per_run=3)
    _agents_run(tight, ScriptedModel([QUICK, QUICK, QUICK, "done"]), lookup)
    assert len(_spans_of(telemetry, tools)) < 3  # spans past the per-run cap are not followed


def test_openai_agents_handler_options_reach_the_handler(telemetry: InMemoryTelemetry) -> None:
    processor = SymfonicTracingProcessor(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        tenant_id="acme",
    )
    _agents_run(processor, ScriptedModel(["It is sunny."]))
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "acme"}) == 1


# --- Pydantic AI --------------------------------------------------------------------------------


def _pydantic_agent(telemetry: InMemoryTelemetry, model: Any) -> PydanticAgent[None, str]:
    capability = SymfonicCapability(handler=telemetry.handler())
    agent: PydanticAgent[None, str] = PydanticAgent(
        FunctionModel(model, model_name="scripted"), name="helper", capabilities=[capability]
    )

    @agent.tool_plain
    def lookup(q: str) -> str:
        """Look something up, slowly."""
        time.sleep(PAUSE_S)
        return f"result for {q}"

    return agent


def _tool_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if sum(1 for m in messages if m.kind == "request") <= 1:
        return ModelResponse(parts=[ToolCallPart("lookup", {"q": "weather"})])
    return ModelResponse(parts=[TextPart("It is sunny.")])


def test_pydantic_ai_run_duration_is_in_seconds(telemetry: InMemoryTelemetry) -> None:
    _pydantic_agent(telemetry, _tool_then_answer).run_sync("What is the weather?")
    assert PAUSE_S <= _run_seconds(telemetry) < PAUSE_S + 5


@pytest.mark.parametrize("exc", [asyncio.CancelledError, KeyboardInterrupt])
def test_pydantic_ai_an_interrupted_run_re_raises_and_ends_cancelled(
    telemetry: InMemoryTelemetry, exc: type[BaseException]
) -> None:
    def interrupted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise exc()

    agent = _pydantic_agent(telemetry, interrupted)
    with pytest.raises(exc):
        asyncio.run(agent.run("What is the weather?"))
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "cancelled"}) == 1


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_openai_agents_an_interrupt_in_the_handler_passes_through_the_processor(
    monkeypatch: pytest.MonkeyPatch, exc: type[BaseException]
) -> None:
    memory = InMemoryTelemetry()
    processor = SymfonicTracingProcessor(handler=memory.handler())

    def interrupted(*args: object, **kwargs: object) -> None:
        raise exc()

    monkeypatch.setattr(processor.handler, "agent_start", interrupted)
    task = SimpleNamespace(
        span_data=SimpleNamespace(type="task"),
        span_id="task1",
        trace_id="trace1",
        parent_id=None,
        started_at=None,
        ended_at=None,
        trace_metadata=None,
        error=None,
    )
    agent = SimpleNamespace(**{**vars(task), "span_id": "agent1", "parent_id": "task1"})
    agent.span_data = SimpleNamespace(type="agent", name="helper")
    with pytest.raises(exc):
        processor.on_span_start(task)  # type: ignore[arg-type]
        processor.on_span_start(agent)  # type: ignore[arg-type]
    processor.shutdown()
    memory.shutdown()
