"""A Pydantic AI tool or model call cancelled (or interrupted) while it runs ends its own span.

Cancellation is no ``Exception``: the tool's span still ends when the tool does, and the model
call is still recorded, each naming the cancellation, and the run ends ``cancelled``; neither is
left to the run's end as an unfinished step or lost.
"""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.pydantic_ai import SymfonicCapability
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def _tool_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if sum(1 for m in messages if m.kind == "request") <= 1:
        return ModelResponse(parts=[ToolCallPart("lookup", {"q": "weather"})])
    return ModelResponse(parts=[TextPart("It is sunny.")])


@pytest.mark.parametrize("exc", [asyncio.CancelledError, KeyboardInterrupt])
def test_an_interrupted_tool_ends_its_span_at_the_tool_naming_the_interruption(
    telemetry: InMemoryTelemetry, exc: type[BaseException]
) -> None:
    capability = SymfonicCapability(handler=telemetry.handler())
    agent: Agent[None, str] = Agent(
        FunctionModel(_tool_then_answer, model_name="scripted"),
        name="helper",
        capabilities=[capability],
    )

    @agent.tool_plain
    def lookup(q: str) -> str:
        """Look something up."""
        raise exc()

    with tenant_scope("acme"), pytest.raises(exc):
        asyncio.run(agent.run("What is the weather?"))
    attributes = telemetry.span("execute_tool lookup").attributes or {}
    assert attributes[semconv.ERROR_TYPE] == exc.__name__
    assert semconv.STEP_UNFINISHED not in attributes
    where = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "cancelled"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1


@pytest.mark.parametrize("exc", [asyncio.CancelledError, KeyboardInterrupt])
def test_an_interrupted_model_call_is_recorded_naming_the_interruption(
    telemetry: InMemoryTelemetry, exc: type[BaseException]
) -> None:
    def interrupted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise exc()

    capability = SymfonicCapability(handler=telemetry.handler())
    agent: Agent[None, str] = Agent(
        FunctionModel(interrupted, model_name="scripted"), name="helper", capabilities=[capability]
    )
    with tenant_scope("acme"), pytest.raises(exc):
        asyncio.run(agent.run("What is the weather?"))
    (chat,) = [span for span in telemetry.spans() if span.name.startswith("chat")]
    assert (chat.attributes or {})[semconv.ERROR_TYPE] == exc.__name__
    where = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "cancelled"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
