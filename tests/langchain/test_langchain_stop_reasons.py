"""Stop reasons from LangChain runs: the raw provider value per model call, the run's exit.

Model calls go through the real ``ChatOpenAI`` / ``ChatAnthropic`` adapters against a loopback
HTTP server serving hand-built bodies in each provider's wire format, so ``response_metadata``
is what those adapters really produce.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast
from uuid import uuid4

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_openai import ChatOpenAI
from langgraph.errors import GraphInterrupt, GraphRecursionError

from symfonic_otel import LangChainCallbackHandler
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import (
    RecordingHandler,
    WireServer,
    add,
    raw_react_graph,
    react_agent,
    recording_handler,
    scripted_agent,
    tool_turn,
)
from tests.support.provider_bodies.openai_bodies import MINI, completion


def openai_body(finish_reason: str, text: str | None = None, **call: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"content": text, "refusal": None}
    if call:
        message["tool_calls"] = [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": call["name"], "arguments": call["arguments"]},
            }
        ]
    usage = {"prompt_tokens": 52, "completion_tokens": 18, "total_tokens": 70}
    return completion("chatcmpl-1", MINI, message, finish_reason, usage, 1763640368)


def anthropic_body(stop_reason: str, text: str, stop_sequence: str | None = None) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-6",
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": {"input_tokens": 32, "output_tokens": 5},
    }


@pytest.fixture
def core(telemetry: InMemoryTelemetry) -> RecordingHandler:
    return recording_handler(telemetry)


@pytest.fixture
def handler(core: RecordingHandler) -> LangChainCallbackHandler:
    return LangChainCallbackHandler(handler=core)


@pytest.fixture
def wire() -> Iterator[list[WireServer]]:
    servers: list[WireServer] = []
    yield servers
    for server in servers:
        server.close()


def serve(wire: list[WireServer], *bodies: dict[str, Any]) -> WireServer:
    server = WireServer(bodies)
    wire.append(server)
    return server


def cfg(handler: LangChainCallbackHandler, **extra: Any) -> RunnableConfig:
    return cast(RunnableConfig, {"callbacks": [handler], **extra})


def llm_stops(core: RecordingHandler) -> list[str | None]:
    return [call.finish_reason for call, _ in core.of("model_call")]


def test_openai_react_agent_raw_and_exit_stop_reasons(
    core: RecordingHandler, handler: LangChainCallbackHandler, wire: list[WireServer]
) -> None:
    server = serve(
        wire,
        openai_body("tool_calls", name="add", arguments='{"a":5,"b":7}'),
        openai_body("stop", "5 + 7 = 12."),
    )
    model = ChatOpenAI(model="gpt-4o-mini", api_key="test", base_url=f"{server.url}/v1")
    result = react_agent(model, [add]).invoke({"messages": [("user", "5+7?")]}, config=cfg(handler))
    assert result["messages"][-1].content == "5 + 7 = 12."
    assert server.paths == ["/v1/chat/completions"] * 2
    assert llm_stops(core) == ["tool_calls", "stop"]
    event, kwargs = core.agent_end_call()
    assert event.stop_reason == "end_turn"
    assert event.error_type is None and kwargs["error_type"] is None


def test_anthropic_raw_value_passes_through_and_max_tokens_is_the_exit(
    core: RecordingHandler, handler: LangChainCallbackHandler, wire: list[WireServer]
) -> None:
    server = serve(
        wire,
        anthropic_body("stop_sequence", "The beautiful city of ", "Paris"),
        anthropic_body("max_tokens", "A long overview of "),
    )
    model = ChatAnthropic(  # type: ignore[call-arg]
        model="claude-opus-4-6", api_key="test", base_url=server.url, max_retries=0
    )
    chain = ChatPromptTemplate.from_messages([("user", "{q}")]) | model
    chain.invoke({"q": "Where?"}, config=cfg(handler))
    chain.invoke({"q": "Tell me everything."}, config=cfg(handler))
    assert llm_stops(core) == ["stop_sequence", "max_tokens"]
    assert core.of("agent_end")[1][0].stop_reason == "max_tokens"


def test_exit_of_a_parsed_result_is_the_last_model_turn(
    core: RecordingHandler, handler: LangChainCallbackHandler, wire: list[WireServer]
) -> None:
    server = serve(wire, openai_body("length", '{"total": 1'))
    model = ChatOpenAI(model="gpt-4o-mini", api_key="test", base_url=f"{server.url}/v1")
    chain = ChatPromptTemplate.from_messages([("user", "{q}")]) | model | JsonOutputParser()
    assert chain.invoke({"q": "sum as JSON"}, config=cfg(handler)) == {"total": 1}
    assert core.agent_end_call()[0].stop_reason == "max_tokens"


def test_run_without_a_model_call_has_no_exit_reason(
    core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    RunnableLambda(lambda x: x).invoke("echo", config=cfg(handler))
    assert core.agent_end_call()[0].stop_reason is None


def test_model_turn_without_metadata_is_inferred(
    core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    """The scripted model sends no stop value: the turn's shape says end_turn (as the loop does)."""
    scripted_agent(tool_turn(), "3").invoke({"messages": [("user", "1+2")]}, config=cfg(handler))
    assert llm_stops(core) == [None, None]
    assert core.agent_end_call()[0].stop_reason == "end_turn"


def test_recursion_limit_exit(core: RecordingHandler, handler: LangChainCallbackHandler) -> None:
    model = ScriptedChatModel([tool_turn(call_id=f"c{i}") for i in range(10)])
    with pytest.raises(GraphRecursionError):
        raw_react_graph(model, [add]).invoke(
            {"messages": [("user", "1+2?")]}, config=cfg(handler, recursion_limit=5)
        )
    event, kwargs = core.agent_end_call()
    assert (event.outcome, event.stop_reason) == ("error", "recursion_limit")
    assert event.error_type == kwargs["error_type"] == "GraphRecursionError"


def test_error_exit_carries_the_exception_type(
    core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    class RateLimitError(RuntimeError):
        pass

    with pytest.raises(RateLimitError):
        scripted_agent(tool_turn(), RateLimitError("slow down")).invoke(
            {"messages": [("user", "1+2")]}, config=cfg(handler)
        )
    event, kwargs = core.agent_end_call()
    assert (event.outcome, event.stop_reason, event.error_type) == (
        "error",
        "error",
        "RateLimitError",
    )
    assert kwargs["error_type"] == "RateLimitError"
    failed = [call for call, _ in core.of("model_call") if call.error_type is not None]
    assert [(call.error_type, call.finish_reason) for call in failed] == [("RateLimitError", None)]


def test_abandoned_stream_exit_is_interrupted(
    core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    stream = scripted_agent(tool_turn(), "3").stream(
        {"messages": [("user", "1+2")]}, config=cfg(handler)
    )
    next(stream)
    stream.close()
    event, _ = core.agent_end_call()
    assert (event.outcome, event.stop_reason, event.error_type) == (
        "cancelled",
        "interrupted",
        None,
    )


def test_interrupt_reaching_the_top_level_is_an_interrupted_exit(
    core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    """A ``GraphInterrupt`` reaching the top-level run's error callback: paused, not failed."""
    root = uuid4()
    handler.on_chain_start({}, {"messages": [("user", "deploy?")]}, run_id=root)
    handler.on_chain_error(GraphInterrupt(), run_id=root)
    event, kwargs = core.agent_end_call()
    assert (event.outcome, event.stop_reason, event.error_type) == (
        "completed",
        "interrupted",
        None,
    )
    assert kwargs["answered"] is None
