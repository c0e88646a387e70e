"""A raising model or tool on the adapters of the main environment (real frameworks, scripted
models, no network).

A model that raises ends the run ``error`` with the exception's class name and the caller gets
the framework's own exception; a tool whose error the framework hands back to the model lets the
run complete with the tool span marked. Neither is ever a silent bail.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Runner
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.llms.mock import MockFunctionCallingLLM
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.pydantic_ai import SymfonicCapability
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.llama_index_support import ANSWER, KINDS, Script, agent, instrumented, run
from tests.support.openai_agents_support import ScriptedModel, installed, run_agent
from tests.support.openai_agents_support import agent as agent_of
from tests.support.raising_support import assert_completed_with_failed_tool, assert_error_run


class ModelDown(Exception):
    """A provider failure no framework knows of: it must reach the caller as itself."""


# --- OpenAI Agents SDK ---------------------------------------------------------------------------


class _DownModel(ScriptedModel):
    """Fails its second call, as a provider client raises, after a tool turn."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(["tool"])
        self.error = error

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        if self.calls:
            raise self.error
        return await super().get_response(*args, **kwargs)

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        if self.calls:
            raise self.error
        async for event in super().stream_response(*args, **kwargs):
            yield event


async def _streamed(model: ScriptedModel) -> None:
    result = Runner.run_streamed(agent_of(model), "What is the weather?")
    async for _ in result.stream_events():
        pass


@pytest.mark.parametrize("streamed", [False, True])
def test_openai_agents_a_raising_model_reaches_the_caller_as_itself_and_the_run_is_error(
    telemetry: InMemoryTelemetry, streamed: bool
) -> None:
    down = ModelDown("provider down")
    with installed(telemetry), tenant_scope("acme"), pytest.raises(ModelDown) as raised:
        if streamed:
            asyncio.run(_streamed(_DownModel(down)))
        else:
            run_agent(_DownModel(down))
    assert raised.value is down
    assert_error_run(telemetry, "acme", down)


# --- LlamaIndex -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_llama_index_a_raising_model_is_an_error_run_and_reaches_the_caller(
    telemetry: InMemoryTelemetry, kind: str
) -> None:
    workflow, _ = agent(kind, ["raise"])
    with instrumented(telemetry), tenant_scope("acme"):
        _, error = run(workflow)
    assert type(error) is RuntimeError and str(error) == "provider down"
    assert_error_run(telemetry, "acme", error)
    chats = [s for s in telemetry.spans() if s.name.startswith("chat")]
    assert chats  # the call that raised names its exception on its own span
    assert (chats[-1].attributes or {})[semconv.ERROR_TYPE] == "RuntimeError"


def test_llama_index_a_raising_tool_is_handed_to_the_model_and_the_run_completes(
    telemetry: InMemoryTelemetry,
) -> None:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        raise ValueError("backend down")

    script = Script(["tool", ANSWER])
    llm = MockFunctionCallingLLM(response_generator=script)
    built = FunctionAgent(name="helper", llm=llm, tools=[add], streaming=False)
    with instrumented(telemetry), tenant_scope("acme"):
        result, error = run(built)
    assert error is None and ANSWER in str(result)
    assert_completed_with_failed_tool(telemetry, "acme", "execute_tool add")


# --- Pydantic AI ----------------------------------------------------------------------------------


def _pydantic_agent(telemetry: InMemoryTelemetry, model: Any) -> Agent[None, str]:
    capability = SymfonicCapability(handler=telemetry.handler())
    return Agent(
        FunctionModel(model, model_name="scripted"), name="helper", capabilities=[capability]
    )


def test_pydantic_ai_a_raising_model_reaches_the_caller_as_itself_and_the_run_is_error(
    telemetry: InMemoryTelemetry,
) -> None:
    down = ModelDown("provider down")

    def failing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise down

    with tenant_scope("acme"), pytest.raises(ModelDown) as raised:
        _pydantic_agent(telemetry, failing).run_sync("q")
    assert raised.value is down
    assert_error_run(telemetry, "acme", down)


def test_pydantic_ai_a_raising_model_call_names_the_exception_on_its_own_span(
    telemetry: InMemoryTelemetry,
) -> None:
    """The model call's span, not only the run's, carries the exception's class name."""

    def failing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ModelDown("provider down")

    with tenant_scope("acme"), pytest.raises(ModelDown):
        _pydantic_agent(telemetry, failing).run_sync("q")
    (chat,) = [s for s in telemetry.spans() if s.name.startswith("chat")]
    assert (chat.attributes or {})["error.type"] == "ModelDown"


def test_pydantic_ai_a_raising_tool_reaches_the_caller_as_itself_and_the_run_is_error(
    telemetry: InMemoryTelemetry,
) -> None:
    """Pydantic AI does not hand a tool's exception to the model: the run ends with it."""
    from pydantic_ai.messages import ToolCallPart

    down = ValueError("backend down")
    agent_ = _pydantic_agent(
        telemetry, lambda m, i: ModelResponse(parts=[ToolCallPart("lookup", {"q": "w"})])
    )

    @agent_.tool_plain
    def lookup(q: str) -> str:
        """Look something up."""
        raise down

    with tenant_scope("acme"), pytest.raises(ValueError) as raised:
        agent_.run_sync("q")
    assert raised.value is down
    assert_error_run(telemetry, "acme", down)
