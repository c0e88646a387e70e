"""What LangChain spans carry without content capture: parameters, ids, token details, timing.

Request parameters and response ids come through the real ``ChatOpenAI`` adapter talking to a
loopback server; the rest through real langchain-core / LangGraph runs over scripted models.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest
from langchain_core.language_models import FakeListLLM
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from opentelemetry.trace import StatusCode

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import AGENT_SPAN, USAGE, WireServer, react_agent
from tests.support.provider_bodies import provider_body

COST = semconv.LLM_COST.name


def cfg(handler: LangChainCallbackHandler, **extra: Any) -> RunnableConfig:
    return cast(RunnableConfig, {"callbacks": [handler], **extra})


def only(telemetry: InMemoryTelemetry, prefix: str) -> dict[str, Any]:
    (span,) = [s for s in telemetry.spans() if s.name.startswith(prefix)]
    return dict(span.attributes or {})


@pytest.fixture
def openai_wire() -> Iterator[WireServer]:
    body = provider_body("openai_stop_after_tool.json")
    body["usage"]["prompt_tokens_details"]["cached_tokens"] = 64
    body["usage"]["completion_tokens_details"]["reasoning_tokens"] = 5
    server = WireServer([body])
    yield server
    server.close()


def test_request_parameters_response_id_model_and_token_details(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler, openai_wire: WireServer
) -> None:
    model = ChatOpenAI(
        model="gpt-4o-mini",
        api_key="test",
        base_url=f"{openai_wire.url}/v1",
        temperature=0.2,
        max_tokens=128,
        top_p=0.9,
        frequency_penalty=0.1,
        presence_penalty=0.3,
        seed=7,
        stop=["END"],
    )
    model.invoke("What is 5+7?", config=cfg(lc))
    chat = only(telemetry, "chat")
    assert chat[semconv.GEN_AI_REQUEST_TEMPERATURE] == 0.2
    assert chat[semconv.GEN_AI_REQUEST_MAX_TOKENS] == 128
    assert chat[semconv.GEN_AI_REQUEST_TOP_P] == 0.9
    assert chat[semconv.GEN_AI_REQUEST_FREQUENCY_PENALTY] == 0.1
    assert chat[semconv.GEN_AI_REQUEST_PRESENCE_PENALTY] == 0.3
    assert chat[semconv.GEN_AI_REQUEST_SEED] == 7
    assert chat[semconv.GEN_AI_REQUEST_STOP_SEQUENCES] == ("END",)
    assert chat[semconv.GEN_AI_RESPONSE_ID] == "chatcmpl-Answer1Ab3Cd5Ef7Gh9Ij1Kl3Mn"
    assert chat[semconv.GEN_AI_RESPONSE_MODEL] == "gpt-4o-mini-2024-07-18"
    assert chat[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 86
    assert chat[semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 64
    assert chat[semconv.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] == 5
    assert semconv.GEN_AI_REQUEST_STREAM not in chat  # not streamed
    assert semconv.GEN_AI_INPUT_MESSAGES not in chat  # capture is off


def test_cache_creation_tokens_from_usage_metadata(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    usage = {
        "input_tokens": 900,
        "output_tokens": 40,
        "total_tokens": 940,
        "input_token_details": {"cache_read": 600, "cache_creation": 200},
        "output_token_details": {"reasoning": 12},
    }
    ScriptedChatModel([AIMessage("ok", usage_metadata=usage)]).invoke("hi", config=cfg(lc))
    chat = only(telemetry, "chat")
    assert chat[semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 600
    assert chat[semconv.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] == 200
    assert chat[semconv.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] == 12


def test_streamed_call_records_time_to_first_chunk(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel(["a streamed answer in several chunks"], chunk_size=4)
    chunks = list(model.stream("hi", config=cfg(lc)))
    assert len(chunks) > 3
    (span,) = [s for s in telemetry.spans() if s.name.startswith("chat")]
    chat = dict(span.attributes or {})
    assert chat[semconv.GEN_AI_REQUEST_STREAM] is True
    first = chat[semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]
    assert isinstance(first, float)
    assert span.end_time is not None and span.start_time is not None
    assert 0.0 <= first <= (span.end_time - span.start_time) / 1e9


def test_priced_model_streamed_without_usage_has_unknown_cost(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    priced = ScriptedChatModel(["streamed, no usage"], model_name="gpt-4o-mini")
    list(priced.stream("hi", config=cfg(lc)))
    with_usage = ScriptedChatModel([AIMessage("ok", usage_metadata=USAGE)], model_name="gpt-4o")
    with_usage.invoke("hi", config=cfg(lc))
    spans = {s.name: dict(s.attributes or {}) for s in telemetry.spans()}
    assert spans["chat gpt-4o-mini"][semconv.LLM_PRICING_UNKNOWN] is True
    assert semconv.LLM_COST_USD not in spans["chat gpt-4o-mini"]
    assert spans["chat gpt-4o"][semconv.LLM_PRICING_UNKNOWN] is False
    assert spans["chat gpt-4o"][semconv.LLM_COST_USD] > 0
    assert telemetry.value(COST, {semconv.LLM_PRICING_UNKNOWN: True}) == 0


def test_conversation_id_from_thread_id_and_metadata(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    agent = react_agent(ScriptedChatModel(["first", "second"]), [], checkpointer=InMemorySaver())
    for _ in range(2):  # the same thread, resumed: both runs carry its id
        agent.invoke(
            {"messages": [("user", "hi")]},
            config=cfg(lc, configurable={"thread_id": "thread-42"}),
        )
    ScriptedChatModel(["x"]).invoke("hi", config=cfg(lc, metadata={"session_id": "sess-7"}))
    conversations = [
        (s.name, (s.attributes or {}).get(semconv.GEN_AI_CONVERSATION_ID))
        for s in sorted(telemetry.spans(), key=lambda s: s.start_time or 0)
    ]
    assert conversations.count((AGENT_SPAN, "thread-42")) == 2
    assert conversations.count(("chat scripted-chat", "thread-42")) == 2
    assert conversations[-1] == ("chat scripted-chat", "sess-7")


def test_completion_model_is_a_text_completion(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    FakeListLLM(responses=["a completion"]).invoke("Complete this", config=cfg(lc))
    (span,) = telemetry.spans()
    assert span.name.startswith("text_completion")
    assert (span.attributes or {})[semconv.GEN_AI_OPERATION_NAME] == "text_completion"


def test_tool_reporting_its_own_error_is_an_error_span(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    from langchain_core.tools import StructuredTool, ToolException

    def charge_card(amount: int) -> str:
        """Charge an amount."""
        raise ToolException("card declined")

    charge = StructuredTool.from_function(charge_card, name="charge", handle_tool_error=True)

    @tool
    def refund(amount: int) -> ToolMessage:
        """Refund an amount (reports its own failure)."""
        return ToolMessage("refund refused", tool_call_id="c2", status="error")

    calls = [
        {"name": "charge", "args": {"amount": 5}, "id": "c1", "type": "tool_call"},
        {"name": "refund", "args": {"amount": 5}, "id": "c2", "type": "tool_call"},
    ]
    agent = react_agent(
        ScriptedChatModel([AIMessage("", tool_calls=calls), "Both failed."]), [charge, refund]
    )
    result = agent.invoke({"messages": [("user", "charge and refund")]}, config=cfg(lc))
    statuses = [m.status for m in result["messages"] if isinstance(m, ToolMessage)]
    assert statuses == ["error", "error"]
    tools = [s for s in telemetry.spans() if s.name.startswith("execute_tool")]
    assert len(tools) == 2
    for span in tools:
        assert span.status.status_code is StatusCode.ERROR
        assert (span.attributes or {})[semconv.ERROR_TYPE] == semconv.TOOL_ERROR_TYPE
    # the model saw the errors and answered: the run itself completed
    assert (telemetry.span(AGENT_SPAN).attributes or {})[semconv.RUN_OUTCOME] == "completed"
