"""Loops through the smolagents, LlamaIndex and Pydantic AI adapters, over the real libraries.

Each scripted model keeps asking for ``add`` with the same arguments (the ``"tool"`` turns of
the shared scripts); the verdicts are those of the handler's own events: a looping run at the
third identical call, none at two, the call budget past ``runaway_calls`` model calls, and the
options taken through each adapter's constructor.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from smolagents import ToolCallingAgent

from symfonic_otel import OTelCallbackHandler, semconv, tenant_scope
from symfonic_otel.llama_index import SymfonicLlamaIndex
from symfonic_otel.smolagents import SymfonicSmolagents
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import llama_index_support as li
from tests.support import smolagents_support as sm
from tests.support.loop_support import all_loop_events, looping, repeated


def _smol(adapter: SymfonicSmolagents, tool_turns: int) -> None:
    model = sm.ScriptedModel(["tool"] * tool_turns + [sm.ANSWER], code=False)
    agent = ToolCallingAgent(
        tools=[sm.add],
        model=model,
        max_steps=20,
        step_callbacks=adapter.step_callbacks(),
        verbosity_level=-1,
    )
    with tenant_scope("acme"):
        agent.run("Add 1 and 2")


def _llama(adapter: SymfonicLlamaIndex, tool_turns: int) -> None:
    workflow, _ = li.agent("function", ["tool"] * tool_turns + [li.ANSWER])

    async def go() -> Any:
        return await workflow.run(user_msg="Add 1 and 2", max_iterations=50)

    adapter.instrument()
    try:
        with tenant_scope("acme"):
            asyncio.run(go())
    finally:
        adapter.uninstrument()


@pytest.mark.parametrize(
    ("adapter_class", "run"),
    [(SymfonicSmolagents, _smol), (SymfonicLlamaIndex, _llama)],
    ids=["smolagents", "llama_index"],
)
def test_three_identical_calls_loop(
    telemetry: InMemoryTelemetry, adapter_class: Callable[..., Any], run: Callable[..., None]
) -> None:
    adapter = adapter_class(telemetry.handler())
    run(adapter, 2)
    assert looping(telemetry) == 0 and repeated(telemetry) == 1
    run(adapter, 6)
    assert looping(telemetry, semconv.LOOP_REPEATED_TOOL_CALL, tenant__id="acme") == 1
    assert repeated(telemetry) == 1 + 5
    (event,) = all_loop_events(telemetry)
    assert event[semconv.GEN_AI_TOOL_NAME] == "add" and event[semconv.LOOP_COUNT] == 3


def test_smolagents_call_budget_and_options(telemetry: InMemoryTelemetry) -> None:
    with pytest.raises(TypeError, match="not both"):
        SymfonicSmolagents(telemetry.handler(), runaway_calls=2)
    adapter = SymfonicSmolagents(runaway_calls=3, loop_threshold=5)
    telemetry.track(adapter.core)
    assert adapter.core.loop_limits.runaway == 3 and adapter.core.loop_limits.threshold == 5
    shared = SymfonicSmolagents(telemetry.handler(runaway_calls=3, loop_threshold=10))
    _smol(shared, 2)  # three model calls
    assert looping(telemetry) == 0
    _smol(shared, 3)  # four
    assert looping(telemetry, semconv.LOOP_CALL_BUDGET) == 1


def test_llama_index_call_budget_and_options(telemetry: InMemoryTelemetry) -> None:
    with pytest.raises(TypeError, match="not both"):
        SymfonicLlamaIndex(telemetry.handler(), loop_threshold=4)
    own = SymfonicLlamaIndex(loop_threshold=4)
    assert isinstance(own.core, OTelCallbackHandler) and own.core.loop_limits.threshold == 4
    adapter = SymfonicLlamaIndex(telemetry.handler(runaway_calls=3, loop_threshold=10))
    _llama(adapter, 2)  # three model calls
    assert looping(telemetry) == 0
    _llama(adapter, 3)  # four
    assert looping(telemetry, semconv.LOOP_CALL_BUDGET) == 1


# --- Pydantic AI (its capability, a FunctionModel script) ----------------------------------------


def _pydantic(telemetry: InMemoryTelemetry, tool_turns: int, **options: Any) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from symfonic_otel.pydantic_ai import SymfonicCapability

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if sum(1 for m in messages if m.kind == "request") <= tool_turns:
            return ModelResponse(parts=[ToolCallPart("lookup", {"q": "weather"})])
        return ModelResponse(parts=[TextPart("It is sunny.")])

    capability = SymfonicCapability(handler=telemetry.handler(**options))
    agent: Agent[None, str] = Agent(
        FunctionModel(model, model_name="scripted"), name="helper", capabilities=[capability]
    )

    @agent.tool_plain
    def lookup(q: str) -> str:
        """Look something up."""
        return f"result for {q}"

    with tenant_scope("acme"):
        agent.run_sync("weather?")


def test_pydantic_ai_loops_and_call_budget(telemetry: InMemoryTelemetry) -> None:
    _pydantic(telemetry, 2)
    assert looping(telemetry) == 0 and repeated(telemetry) == 1
    _pydantic(telemetry, 4)
    assert looping(telemetry, semconv.LOOP_REPEATED_TOOL_CALL, tenant__id="acme") == 1
    _pydantic(telemetry, 3, runaway_calls=3, loop_threshold=10)  # four model calls
    assert looping(telemetry, semconv.LOOP_CALL_BUDGET, tenant__id="acme") == 1
    from symfonic_otel.pydantic_ai import SymfonicCapability

    assert SymfonicCapability(loop_threshold=7).core.loop_limits.threshold == 7
    with pytest.raises(TypeError, match="not both"):
        SymfonicCapability(handler=telemetry.handler(), runaway_calls=9)


# --- OpenAI Agents SDK (its tracing processor, a scripted model) ---------------------------------


def test_openai_agents_loops_and_call_budget(telemetry: InMemoryTelemetry) -> None:
    """The tool's arguments reach the processor at the tool's end (traced sensitive data, the
    SDK's default); the run is judged as it runs."""
    from agents import set_trace_processors

    from symfonic_otel.openai_agents import SymfonicTracingProcessor
    from tests.support import openai_agents_support as oa

    def run(tool_turns: int, **options: Any) -> None:
        made = SymfonicTracingProcessor(handler=telemetry.handler(**options))
        set_trace_processors([made])
        try:
            with tenant_scope("acme"):
                oa.run_agent(oa.answering(tool_turns=tool_turns), max_turns=20)
        finally:
            set_trace_processors([])

    run(2)
    assert looping(telemetry) == 0 and repeated(telemetry) == 1
    run(4)
    assert looping(telemetry, semconv.LOOP_REPEATED_TOOL_CALL, tenant__id="acme") == 1
    run(3, runaway_calls=3, loop_threshold=10)  # four model calls
    assert looping(telemetry, semconv.LOOP_CALL_BUDGET, tenant__id="acme") == 1
    own = SymfonicTracingProcessor(loop_threshold=6)
    telemetry.track(own.handler)
    assert own.handler.loop_limits.threshold == 6
