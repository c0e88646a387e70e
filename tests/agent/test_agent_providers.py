"""The reference loop through the real provider adapters, over a loopback HTTP server.

Each test builds the provider's chat model from its own LangChain package, points it at a local
server that answers with the provider's wire format (the Anthropic bodies come from
``provider_bodies``; the others are built here after the providers' API references), and runs
the loop.
What is asserted is what the loop did with what the adapter parsed: whether the tools ran, the
normalised stop reason, the events, and what went back over the wire.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_ollama import ChatOllama
from langchain_openai import ChatOpenAI

from symfonic_otel.agent import FrameworkConfig, ReactAgent, StreamFinal
from symfonic_otel.agent.exits import REFUSED_NOTE, TRUNCATED_NOTE
from symfonic_otel.agent.history import NOT_RUN
from symfonic_otel.agent.prompts import CONTINUE_PROMPT
from tests.support.agent_support import Recorder, unanswered_calls
from tests.support.provider_bodies import provider_body, provider_body_bytes
from tests.support.provider_turns import response, responses_usage
from tests.support.wire_server import WireResponse, WireServer, serve


@tool
def stock(sku: str) -> str:
    """How many units of a SKU are in stock."""
    return f"{sku}: 7 units"


ANSWER = "sku-42 has 7 units in stock."


async def run_agent(agent: ReactAgent, query: str, path: str) -> Any:
    if path == "run":
        return await agent.run(query)
    events = [event async for event in agent.stream(query)]
    final = events[-1]
    assert isinstance(final, StreamFinal)
    return final.response


# --- Gemini: langchain-google-genai ----------------------------------------------------------


def gemini(parts: list[dict[str, Any]], finish: str, **usage: int) -> dict[str, Any]:
    candidate: dict[str, Any] = {"index": 0, "finishReason": finish}
    if parts:
        candidate["content"] = {"role": "model", "parts": parts}
    return {
        "candidates": [candidate],
        "usageMetadata": {
            "promptTokenCount": 20,
            "candidatesTokenCount": 6,
            "totalTokenCount": 26,
            **usage,
        },
        "modelVersion": "gemini-2.5-flash",
    }


def gemini_response(body: dict[str, Any], path: str) -> WireResponse:
    if path == "run":
        return WireResponse(body)
    # streamGenerateContent?alt=sse: one event per chunk; a single chunk carries it all here.
    return WireResponse(f"data: {json.dumps(body)}\r\n\r\n", content_type="text/event-stream")


def gemini_model(server: WireServer) -> ChatGoogleGenerativeAI:
    return ChatGoogleGenerativeAI(
        model="gemini-2.5-flash", google_api_key="test-key", base_url=server.url
    )


FUNCTION_CALL = {"functionCall": {"name": "stock", "args": {"sku": "sku-42"}}}


@pytest.mark.parametrize("path", ["run", "stream"])
async def test_gemini_function_call_reported_as_stop_runs_the_tool(path: str) -> None:
    first = gemini(
        [{"text": "Let me check the stock."}, FUNCTION_CALL], "STOP", cachedContentTokenCount=12
    )
    second = gemini([{"text": ANSWER}], "STOP")
    recorder = Recorder()
    with serve(gemini_response(first, path), gemini_response(second, path)) as server:
        agent = ReactAgent(gemini_model(server), [stock], callbacks=[recorder])
        response = await run_agent(agent, "Is sku-42 in stock?", path)

    assert response.final_response == ANSWER
    assert (response.stop_reason, response.salvaged, response.iterations) == ("end_turn", False, 2)
    assert len(server.requests) == 2
    # The tool ran and its result went back to Gemini as a functionResponse.
    sent = json.dumps(server.requests[1].body)
    assert "functionResponse" in sent and "sku-42: 7 units" in sent
    llm = recorder.of("llm_end")
    assert [e.stop_reason for e in llm] == ["STOP", "STOP"]
    assert llm[0].typed_usage.cache_read_tokens == 12
    [end] = recorder.of("agent_end")
    assert (end.stop_reason, end.final_response) == ("end_turn", ANSWER)
    assert unanswered_calls(response.messages) == []


@pytest.mark.parametrize(
    ("parts", "finish", "stop", "final"),
    [
        ([{"text": ANSWER}], "STOP", "end_turn", ANSWER),
        (
            [{"text": "sku-42 has 7"}],
            "MAX_TOKENS",
            "max_tokens",
            f"sku-42 has 7\n\n{TRUNCATED_NOTE}",
        ),
        ([], "SAFETY", "refusal", REFUSED_NOTE),
        ([], "PROHIBITED_CONTENT", "refusal", REFUSED_NOTE),
        ([{"text": "Stock is"}], "RECITATION", "RECITATION", "Stock is\n\n[stopped: RECITATION]"),
    ],
    ids=["STOP", "MAX_TOKENS", "SAFETY", "PROHIBITED_CONTENT", "RECITATION"],
)
async def test_gemini_finish_reasons_are_normalised_and_noted(
    parts: list[dict[str, Any]], finish: str, stop: str, final: str
) -> None:
    recorder = Recorder()
    with serve(WireResponse(gemini(parts, finish))) as server:
        agent = ReactAgent(
            gemini_model(server),
            [stock],
            config=FrameworkConfig(stop_reason_notes=True),
            callbacks=[recorder],
        )
        response = await agent.run("Is sku-42 in stock?")

    assert len(server.requests) == 1
    assert (response.stop_reason, response.run_stop_reason) == (stop, stop)
    assert response.final_response == final
    [llm] = recorder.of("llm_end")
    assert llm.stop_reason == finish
    [end] = recorder.of("agent_end")
    assert end.stop_reason == stop
    last = response.messages[-1]
    assert isinstance(last, AIMessage)
    if response.stop_note is None:
        assert last.content == ANSWER
    else:
        assert last.content == response.stop_note
        assert final.endswith(response.stop_note)
    # A refusal without text is still an empty answer for telemetry, whatever the note says.
    assert end.final_response == ("" if not parts else final.removesuffix(f"\n\n{last.content}"))
    assert len(recorder.of("react_loop_end")) == (0 if parts else 1)


async def test_gemini_max_tokens_answer_is_continued() -> None:
    with serve(
        WireResponse(gemini([{"text": "sku-42 has "}], "MAX_TOKENS")),
        WireResponse(gemini([{"text": "7 units in stock."}], "STOP")),
    ) as server:
        agent = ReactAgent(
            gemini_model(server), [stock], config=FrameworkConfig(max_length_recoveries=1)
        )
        response = await agent.run("Is sku-42 in stock?")

    assert response.final_response == ANSWER
    assert response.stop_reason == "end_turn"
    assert CONTINUE_PROMPT in json.dumps(server.requests[1].body)


# --- Ollama: langchain-ollama (native /api/chat, NDJSON stream) --------------------------------


def ollama(content: str, *, calls: list[dict[str, Any]] = (), done: str = "stop") -> WireResponse:  # type: ignore[assignment]
    lines: list[dict[str, Any]] = []
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"function": c} for c in calls]
    lines.append(
        {
            "model": "qwen3:8b",
            "created_at": "2025-06-01T10:00:00Z",
            "message": message,
            "done": False,
        }
    )
    lines.append(
        {
            "model": "qwen3:8b",
            "created_at": "2025-06-01T10:00:01Z",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": done,
            "total_duration": 1_000_000,
            "prompt_eval_count": 30,
            "eval_count": 9,
        }
    )
    body = "".join(json.dumps(line) + "\n" for line in lines)
    return WireResponse(body, content_type="application/x-ndjson")


async def test_ollama_tool_call_with_done_reason_stop_runs_the_tool() -> None:
    # A qwen model on Ollama: the qwen rule belongs to DashScope's API, not to the model.
    recorder = Recorder()
    with serve(
        ollama("Let me check.", calls=[{"name": "stock", "arguments": {"sku": "sku-42"}}]),
        ollama(ANSWER),
    ) as server:
        agent = ReactAgent(
            ChatOllama(model="qwen3:8b", base_url=server.url), [stock], callbacks=[recorder]
        )
        response = await agent.run("Is sku-42 in stock?")

    assert response.final_response == ANSWER
    assert (response.stop_reason, response.salvaged, len(server.requests)) == ("end_turn", False, 2)
    sent = server.requests[1].body["messages"]
    assert sent[-1]["role"] == "tool" and sent[-1]["content"] == "sku-42: 7 units"
    assert [e.stop_reason for e in recorder.of("llm_end")] == ["stop", "stop"]
    assert recorder.of("agent_end")[0].stop_reason == "end_turn"


async def test_ollama_length_is_max_tokens() -> None:
    with serve(ollama("sku-42 has", done="length")) as server:
        agent = ReactAgent(ChatOllama(model="qwen3:8b", base_url=server.url), [stock])
        response = await agent.run("Is sku-42 in stock?")
    assert (response.final_response, response.stop_reason) == ("sku-42 has", "max_tokens")


# --- OpenAI Responses API: langchain-openai with use_responses_api ----------------------------


@pytest.mark.parametrize(("reason", "normalised"), [("max_output_tokens", "max_tokens")])
async def test_responses_api_cut_response_is_a_max_tokens_exit(
    reason: str, normalised: str
) -> None:
    """The Responses API reports no finish reason: a cut response is ``status: incomplete``
    with its reason in ``incomplete_details``, which the loop must read as max_tokens."""
    said = {"type": "output_text", "text": "sku-42 has", "annotations": []}
    message = {"id": "msg_1", "type": "message", "status": "incomplete", "role": "assistant"}
    cut = response(
        "resp_1",
        [{**message, "content": [said]}],
        responses_usage(40, 0, 16, 0),
        status="incomplete",
        incomplete_details={"reason": reason},
    )
    recorder = Recorder()
    with serve(WireResponse(cut)) as server:
        model = ChatOpenAI(
            model="gpt-5-mini",
            api_key="k",  # type: ignore[arg-type]
            base_url=f"{server.url}/v1",
            use_responses_api=True,
            max_retries=0,
        )
        agent = ReactAgent(model, [stock], callbacks=[recorder])
        answer = await agent.run("Is sku-42 in stock?")
    assert (answer.final_response, answer.stop_reason) == ("sku-42 has", normalised)
    assert [e.stop_reason for e in recorder.of("llm_end")] == [reason]


# --- OpenAI-compatible gateways: langchain-openai ---------------------------------------------


def chat_completion(
    model: str, content: str | None, finish: str, calls: list[dict[str, Any]] | None = None
) -> WireResponse:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["args"])},
            }
            for i, c in enumerate(calls)
        ]
    return WireResponse(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_750_000_000,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": 40,
                "completion_tokens": 12,
                "total_tokens": 52,
                "prompt_tokens_details": {"cached_tokens": 32},
            },
        }
    )


STOCK_CALL = {"name": "stock", "args": {"sku": "sku-42"}}


def openai_model(server: WireServer, model: str, path: str = "/v1") -> ChatOpenAI:
    return ChatOpenAI(model=model, base_url=server.url + path, api_key="test-key", max_retries=0)


async def test_gateway_serving_gemini_with_stop_and_tool_calls_runs_the_tools() -> None:
    recorder = Recorder()
    with serve(
        chat_completion("gemini-2.5-flash", "Checking.", "stop", [STOCK_CALL]),
        chat_completion("gemini-2.5-flash", ANSWER, "stop"),
    ) as server:
        agent = ReactAgent(openai_model(server, "gemini-2.5-flash"), [stock], callbacks=[recorder])
        response = await agent.run("Is sku-42 in stock?")

    assert response.final_response == ANSWER
    assert len(server.requests) == 2
    tool_message = server.requests[1].body["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "call_0", "content": "sku-42: 7 units"}
    assert recorder.of("llm_end")[0].typed_usage.cache_read_tokens == 32


QWEN_TEXT = "sku-42 has 7 units in stock; I can also check the warehouse if you like."


@pytest.mark.parametrize(
    ("setting", "requests", "salvaged"), [("auto", 1, True), ("never", 2, False)]
)
async def test_qwen_text_with_tool_calls_and_stop_is_the_answer(
    setting: str, requests: int, salvaged: bool
) -> None:
    recorder = Recorder()
    with serve(
        chat_completion("qwen3-max", QWEN_TEXT, "stop", [STOCK_CALL]),
        chat_completion("qwen3-max", ANSWER, "stop"),
    ) as server:
        agent = ReactAgent(
            openai_model(server, "qwen3-max", "/compatible-mode/v1"),
            [stock],
            config=FrameworkConfig(finish_on_text_with_tool_calls=setting),  # type: ignore[arg-type]
            callbacks=[recorder],
        )
        response = await agent.run("Is sku-42 in stock?")

    assert len(server.requests) == requests
    assert response.salvaged is salvaged
    assert response.final_response == (QWEN_TEXT if salvaged else ANSWER)
    assert recorder.of("agent_end")[0].stop_reason == "end_turn"
    if salvaged:
        assert response.ended_by == "end_turn_with_text"
        results = [m for m in response.messages if isinstance(m, ToolMessage)]
        assert [(r.tool_call_id, r.content) for r in results] == [("call_0", NOT_RUN)]


async def test_always_salvages_even_for_a_gemini_gateway() -> None:
    with serve(chat_completion("gemini-2.5-flash", "Checking.", "stop", [STOCK_CALL])) as server:
        agent = ReactAgent(
            openai_model(server, "gemini-2.5-flash"),
            [stock],
            config=FrameworkConfig(finish_on_text_with_tool_calls="always"),
        )
        response = await agent.run("Is sku-42 in stock?")
    assert (response.final_response, response.salvaged, len(server.requests)) == (
        "Checking.",
        True,
        1,
    )


# --- Anthropic: langchain-anthropic with the bodies of provider_bodies ----------------------


def anthropic_model(server: WireServer, model: str) -> ChatAnthropic:
    return ChatAnthropic(model=model, base_url=server.url, api_key="test-key", max_retries=0)  # type: ignore[call-arg]


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
async def test_anthropic_stop_sequence_passes_through_verbatim() -> None:
    body = provider_body("anthropic_stop_sequence.json")
    recorder = Recorder()
    with serve(WireResponse(body)) as server:
        agent = ReactAgent(
            anthropic_model(server, body["model"]),
            [stock],
            config=FrameworkConfig(stop_reason_notes=True),
            callbacks=[recorder],
        )
        response = await agent.run("Which city?")

    text = body["content"][0]["text"]
    assert (response.stop_reason, response.run_stop_reason) == ("stop_sequence", "stop_sequence")
    assert response.final_response == f"{text}\n\n[stopped: stop_sequence]"
    assert response.messages[-1].content == "[stopped: stop_sequence]"
    assert response.termination_reason is None
    [llm] = recorder.of("llm_end")
    assert (llm.stop_reason, llm.model) == ("stop_sequence", body["model"])
    [end] = recorder.of("agent_end")
    assert (end.stop_reason, end.final_response) == ("stop_sequence", text)


async def test_anthropic_max_tokens_body_carries_cache_creation_tokens() -> None:
    body = provider_body("anthropic_max_tokens_cache_write.json")
    recorder = Recorder()
    with serve(WireResponse(body)) as server:
        agent = ReactAgent(anthropic_model(server, body["model"]), [stock], callbacks=[recorder])
        response = await agent.run("Summarise the document.")

    assert response.stop_reason == "max_tokens"
    [llm] = recorder.of("llm_end")
    usage = llm.typed_usage
    assert usage.cache_creation_tokens == body["usage"]["cache_creation_input_tokens"] > 0
    assert usage.output_tokens == body["usage"]["output_tokens"]


@tool
def get_weather(location: str) -> str:
    """The weather at a location."""
    return f"sunny in {location}"


@tool
def get_time(timezone: str) -> str:
    """The time in a timezone."""
    return f"noon in {timezone}"


async def test_anthropic_stream_with_two_tool_uses_runs_both_then_answers() -> None:
    sse = "text/event-stream"
    recorder = Recorder()
    with serve(
        WireResponse(
            provider_body_bytes("anthropic_stream_text_two_tool_use.sse"), content_type=sse
        ),
        WireResponse(provider_body_bytes("anthropic_stream_thinking_text.sse"), content_type=sse),
    ) as server:
        agent = ReactAgent(
            anthropic_model(server, "claude-3-5-sonnet-20240620"),
            [get_weather, get_time],
            callbacks=[recorder],
        )
        response = await run_agent(agent, "Weather and time in San Francisco?", "stream")

    assert len(server.requests) == 2
    results = [m for m in response.messages if isinstance(m, ToolMessage)]
    assert sorted(r.name for r in results) == ["get_time", "get_weather"]
    assert all(r.status != "error" for r in results)
    sent = server.requests[1].body["messages"]
    assert [b["type"] for b in sent[-1]["content"]] == ["tool_result", "tool_result"]
    assert response.stop_reason == "end_turn"
    assert response.final_response == "It is sunny in San Francisco, and the local time is noon."
    assert [e.stop_reason for e in recorder.of("llm_end")] == ["tool_use", "end_turn"]
    assert unanswered_calls(response.messages) == []
