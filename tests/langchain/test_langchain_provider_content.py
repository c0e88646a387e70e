"""Chat spans of a LangGraph agent turn through each provider's own LangChain adapter.

ChatOpenAI (chat completions and the Responses API), ChatAnthropic, ChatGoogleGenerativeAI and
ChatOllama talk real HTTP to a loopback server that replays the provider's wire shape (see
``provider_turns``); the real prebuilt ReAct agent runs a turn with a system prompt, the
question, a tool-calling AI turn, the tool result and the answer, invoked and streamed. What is
asserted is the exported chat spans: the exact ``gen_ai.*.messages`` JSON each adapter's message
shape becomes, ids, model, finish reasons, token details and cost, and, with capture off, that no
content reaches any span while parameters, ids and counts still do.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_ollama import ChatOllama
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.emit.pricing import DEFAULT_PRICES
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import AGENT_SPAN, internal_errors, react_agent
from tests.support.provider_bodies import provider_body, provider_body_bytes
from tests.support.provider_turns import (
    SSE,
    STOCK_ANSWER,
    STOCK_QUESTION,
    STOCK_RESULT,
    SYSTEM,
    Path,
    anthropic_stream,
    anthropic_stream_blocks,
    anthropic_stream_with_usage,
    chats,
    every_value,
    gemini_chunk,
    gemini_reply,
    loads,
    ollama_reply,
    openai_stream_message,
    openai_stream_without_usage,
    reasoning,
    response,
    responses_stream,
    responses_usage,
    run_turn,
    stock,
    text,
    tool_call,
    tool_call_ids,
    tool_result,
    user,
)
from tests.support.wire_server import WireResponse, serve

PATHS = pytest.mark.parametrize("path", ["invoke", "stream"])
INPUT = semconv.GEN_AI_INPUT_MESSAGES
OUTPUT = semconv.GEN_AI_OUTPUT_MESSAGES


def instructions(chat: dict[str, Any]) -> Any:
    return loads(chat[semconv.GEN_AI_SYSTEM_INSTRUCTIONS])


def tool_names(chat: dict[str, Any]) -> list[str]:
    return [definition["name"] for definition in loads(chat[semconv.GEN_AI_TOOL_DEFINITIONS])]


def assistant(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    if finish is not None:
        message["finish_reason"] = finish
    return message


def stock_turn(thought: str, said: str, call_id: str) -> list[dict[str, Any]]:
    """A reply that thinks ``thought``, says ``said`` and calls ``stock`` for sku-42."""
    return [reasoning(thought), text(said), tool_call("stock", call_id, {"sku": "sku-42"})]


def assert_stock_turns(
    one: dict[str, Any],
    two: dict[str, Any],
    turn: list[dict[str, Any]],
    call_id: str,
    finish: str,
    answer_finish: str | None = None,
) -> None:
    """The stock question's two chats: the first answers with ``turn``; the second is asked
    the question, that turn and the tool's result, and answers (``answer_finish``, else
    ``finish``)."""
    assert loads(one[OUTPUT]) == [assistant(turn, finish)]
    assert loads(two[INPUT]) == [
        user(STOCK_QUESTION),
        assistant(turn),
        tool_result(call_id, STOCK_RESULT),
    ]
    assert loads(two[OUTPUT]) == [assistant([text(STOCK_ANSWER)], answer_finish or finish)]


def cached_first_body(five_minute: int, one_hour: int) -> dict[str, Any]:
    """The thinking, text and tool-use reply, edited: the prompt hit the cache (600 tokens
    read) and wrote ``five_minute`` + ``one_hour`` tokens, in today's usage shape (writes split
    by TTL)."""
    first = provider_body("anthropic_thinking_text_tool_use.json")
    first["usage"].update(
        cache_read_input_tokens=600,
        cache_creation_input_tokens=five_minute + one_hour,
        cache_creation={
            "ephemeral_5m_input_tokens": five_minute,
            "ephemeral_1h_input_tokens": one_hour,
        },
    )
    return first


def claude(server: Any, first: dict[str, Any]) -> ChatAnthropic:
    return ChatAnthropic(  # type: ignore[call-arg]
        model=first["model"], base_url=server.url, api_key="k", max_retries=0, max_tokens=2048
    )


# --- Anthropic ---------------------------------------------------------------------------------


@tool
def get_user_country() -> str:
    """The country the user is in."""
    return "Mexico"


def test_anthropic_thinking_text_and_tool_use_blocks_with_cache_writes(
    telemetry: InMemoryTelemetry,
) -> None:
    first = cached_first_body(five_minute=1200, one_hour=0)
    second = provider_body("anthropic_end_turn_after_tool.json")
    question = "What is the largest city in the user country?"
    with serve(WireResponse(first), WireResponse(second)) as server:
        model = claude(server, first)
        messages = run_turn(
            telemetry, model, [get_user_country], question, capture=True, path="invoke"
        )
    assert len(messages) == 4  # question, tool turn, tool result, answer
    one, two = chats(telemetry)
    thinking, said, use = first["content"]
    turn = [
        reasoning(thinking["thinking"]),
        text(said["text"]),
        tool_call(use["name"], use["id"], use["input"]),
    ]
    assert instructions(one) == instructions(two) == [text(SYSTEM)]
    assert tool_names(one) == ["get_user_country"]
    assert loads(one[INPUT]) == [user(question)]
    assert loads(one[OUTPUT]) == [assistant(turn, "tool_use")]
    assert loads(two[INPUT]) == [user(question), assistant(turn), tool_result(use["id"], "Mexico")]
    assert loads(two[OUTPUT]) == [assistant([text(second["content"][0]["text"])], "end_turn")]

    assert (one[semconv.GEN_AI_RESPONSE_ID], two[semconv.GEN_AI_RESPONSE_ID]) == (
        first["id"],
        second["id"],
    )
    assert one[semconv.GEN_AI_RESPONSE_MODEL] == first["model"]
    assert one[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_use",)
    assert two[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ("end_turn",)
    assert one[semconv.GEN_AI_REQUEST_MAX_TOKENS] == 2048
    assert one[semconv.GEN_AI_PROVIDER_NAME] == "anthropic"
    # Anthropic's input_tokens leaves the cache out; LangChain's (and semconv's) counts it in.
    inputs, outputs = first["usage"]["input_tokens"], first["usage"]["output_tokens"]
    assert one[semconv.GEN_AI_USAGE_INPUT_TOKENS] == inputs + 600 + 1200
    assert one[semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 600
    assert one[semconv.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] == 1200
    assert one[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == first["usage"]["output_tokens"]
    assert semconv.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS not in two  # none written
    price = DEFAULT_PRICES["claude-sonnet-4"]
    assert one[semconv.LLM_PRICING_UNKNOWN] is False
    assert one[semconv.LLM_COST_USD] == pytest.approx(price.cost(inputs, outputs, 600, 1200))


def test_anthropic_one_hour_cache_writes_are_priced_at_their_own_rate(
    telemetry: InMemoryTelemetry,
) -> None:
    first = cached_first_body(five_minute=400, one_hour=800)  # 800 written for an hour
    second = provider_body("anthropic_end_turn_after_tool.json")
    with serve(WireResponse(first), WireResponse(second)) as server:
        model = claude(server, first)
        run_turn(telemetry, model, [get_user_country], "Where?", capture=False, path="invoke")
    one, _ = chats(telemetry)
    assert one[semconv.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] == 1200
    price = DEFAULT_PRICES["claude-sonnet-4"]
    inputs, outputs = first["usage"]["input_tokens"], first["usage"]["output_tokens"]
    expected = price.cost(inputs, outputs, 600, 1200, 800)
    assert one[semconv.LLM_COST_USD] == pytest.approx(expected)
    assert expected > price.cost(inputs, outputs, 600, 1200)  # the one-hour rate is the higher one


def test_anthropic_native_history_keeps_its_tool_use_and_tool_result(
    telemetry: InMemoryTelemetry,
) -> None:
    first = provider_body("anthropic_thinking_text_tool_use.json")
    second = provider_body("anthropic_end_turn_after_tool.json")
    question = "What is the largest city in the user country?"
    _, said, use = first["content"]
    history = [  # the Anthropic SDK's shape, as callers moving from it keep their history
        {"role": "user", "content": question},
        {"role": "assistant", "content": [said, use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "Mexico"}],
        },
    ]
    lc = LangChainCallbackHandler(handler=telemetry.handler(capture_content=True))
    with serve(WireResponse(second)) as server:
        model = ChatAnthropic(  # type: ignore[call-arg]
            model=second["model"], base_url=server.url, api_key="k", max_retries=0
        )
        agent = react_agent(model, [get_user_country], prompt=SYSTEM)
        agent.invoke({"messages": history}, config={"callbacks": [lc]})
        sent = server.requests[0].body["messages"]
    assert [b["type"] for m in sent[1:] for b in m["content"]] == [
        "text",
        "tool_use",
        "tool_result",
    ]
    assert internal_errors(telemetry) == 0
    (chat,) = chats(telemetry)
    assert loads(chat[INPUT]) == [
        user(question),
        assistant([text(said["text"]), tool_call(use["name"], use["id"], use["input"])]),
        {"role": "user", "parts": tool_result(use["id"], "Mexico")["parts"]},
    ]


@tool
def get_weather(location: str) -> str:
    """The weather at a location."""
    return f"sunny in {location}"


@tool
def get_time(timezone: str) -> str:
    """The time in a timezone."""
    return f"noon in {timezone}"


def test_anthropic_streamed_text_two_tool_uses_then_thinking(
    telemetry: InMemoryTelemetry,
) -> None:
    tools_sse = provider_body_bytes("anthropic_stream_text_two_tool_use.sse")
    answer_sse = provider_body_bytes("anthropic_stream_thinking_text.sse")
    with serve(
        anthropic_stream_with_usage(tools_sse), anthropic_stream_with_usage(answer_sse)
    ) as server:
        model = ChatAnthropic(  # type: ignore[call-arg]
            model="claude-3-5-sonnet-20240620", base_url=server.url, api_key="k", max_retries=0
        )
        messages = run_turn(
            telemetry,
            model,
            [get_weather, get_time],
            "Weather and time in San Francisco?",
            capture=True,
            path="stream",
        )
    said, weather, clock = anthropic_stream_blocks(tools_sse)
    thought, answer = anthropic_stream_blocks(answer_sse)
    one, two = chats(telemetry)
    turn = [
        text(said["text"]),
        tool_call(weather["name"], weather["id"], weather["input"]),
        tool_call(clock["name"], clock["id"], clock["input"]),
    ]
    assert loads(one[OUTPUT]) == [assistant(turn, "tool_use")]
    assert loads(two[INPUT])[1:] == [
        assistant(turn),
        tool_result(weather["id"], f"sunny in {weather['input']['location']}"),
        tool_result(clock["id"], f"noon in {clock['input']['timezone']}"),
    ]
    final = [reasoning(thought["thinking"]), text(answer["text"])]
    assert loads(two[OUTPUT]) == [assistant(final, "end_turn")]
    assert messages[-1].content[0]["thinking"] == thought["thinking"]  # type: ignore[index]
    for chat, usage in ((one, (488, 141)), (two, (61, 198))):
        assert chat[semconv.GEN_AI_REQUEST_STREAM] is True
        assert chat[semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] >= 0
        inputs, outputs = usage
        assert chat[semconv.GEN_AI_USAGE_INPUT_TOKENS] == inputs
        assert chat[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == outputs
        # langchain-anthropic drops message_start's id when streaming: none beats a local one.
        assert semconv.GEN_AI_RESPONSE_ID not in chat
    assert one[semconv.GEN_AI_RESPONSE_MODEL] == "claude-3-5-sonnet-20240620"
    assert two[semconv.GEN_AI_RESPONSE_MODEL] == "claude-3-7-sonnet-20250219"
    assert one[semconv.LLM_PRICING_UNKNOWN] is True  # not in the price table, usage or not


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
@pytest.mark.parametrize(
    ("version", "path"),
    [("v0", "invoke"), ("v1", "invoke"), ("v0", "stream")],  # v1: LangChain's standard blocks
)
def test_anthropic_server_tool_uses_and_results_leave_room_for_the_text(
    telemetry: InMemoryTelemetry, version: str, path: Path
) -> None:
    body = provider_body("anthropic_pause_turn.json")  # thinking, text, 8 web searches, texts
    reply = anthropic_stream(body) if path == "stream" else WireResponse(body)
    with serve(reply) as server:
        model = ChatAnthropic(  # type: ignore[call-arg]
            model=body["model"], base_url=server.url, api_key="k", max_retries=0
        )
        if version == "v1":
            model = model.model_copy(update={"output_version": "v1"})
        web_search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 15}
        run_turn(telemetry, model, [web_search], "Search 8 topics.", capture=True, path=path)
        assert server.requests[0].body["tools"] == [web_search]
    (chat,) = chats(telemetry)
    assert "encrypted" not in chat[OUTPUT]  # opaque provider state stays out
    (message,) = loads(chat[OUTPUT])
    assert message["finish_reason"] == "pause_turn"
    kinds = {"thinking": "reasoning", "text": "text", "server_tool_use": "server_tool_call"}
    kinds["web_search_tool_result"] = "server_tool_call_response"
    parts = message["parts"]
    assert [p["type"] for p in parts] == [kinds[b["type"]] for b in body["content"]][: len(parts)]
    texts = [b["text"] for b in body["content"] if b["type"] == "text"]
    assert [p["content"] for p in parts if p["type"] == "text"] == texts  # none lost to results
    search, found = body["content"][2], body["content"][3]
    arguments, results = ("input", "content") if version == "v0" else ("args", "output")
    assert parts[2] == {
        "type": "server_tool_call",
        "id": search["id"],
        "name": "web_search",
        "server_tool_call": {"type": "web_search", arguments: search["input"]},
    }
    result = parts[3]["server_tool_call_response"]
    assert (parts[3]["id"], result["type"]) == (search["id"], "web_search_tool_result")
    first = found["content"][0]
    assert result[results][0] == {k: v for k, v in first.items() if k != "encrypted_content"}
    assert chat[semconv.CONTENT_TRUNCATED] is True  # the results were cut, not the text


# --- OpenAI chat completions -------------------------------------------------------------------


@tool
def add_numbers(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def openai(server: Any, **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(api_key="k", base_url=f"{server.url}/v1", max_retries=0, **kwargs)  # type: ignore[arg-type]


def test_openai_tool_calls_and_answer(telemetry: InMemoryTelemetry) -> None:
    first, second = (
        provider_body("openai_tool_calls.json"),
        provider_body("openai_stop_after_tool.json"),
    )
    with serve(WireResponse(first), WireResponse(second)) as server:
        model = openai(server, model="gpt-4o-mini", temperature=0.1, seed=7)
        run_turn(telemetry, model, [add_numbers], "What is 5 + 7?", capture=True, path="invoke")
    one, two = chats(telemetry)
    (call,) = first["choices"][0]["message"]["tool_calls"]
    arguments = json.loads(call["function"]["arguments"])
    turn = [tool_call("add_numbers", call["id"], arguments)]
    assert instructions(one) == [text(SYSTEM)]
    assert loads(one[OUTPUT]) == [assistant(turn, "tool_calls")]
    assert loads(two[INPUT]) == [
        user("What is 5 + 7?"),
        assistant(turn),
        tool_result(call["id"], "12"),
    ]
    answer = second["choices"][0]["message"]["content"]
    assert loads(two[OUTPUT]) == [assistant([text(answer)], "stop")]
    for chat, body in ((one, first), (two, second)):
        assert chat[semconv.GEN_AI_RESPONSE_ID] == body["id"]
        assert chat[semconv.GEN_AI_RESPONSE_MODEL] == body["model"]
        assert chat[semconv.GEN_AI_USAGE_INPUT_TOKENS] == body["usage"]["prompt_tokens"]
        assert chat[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == body["usage"]["completion_tokens"]
        assert chat[semconv.GEN_AI_REQUEST_TEMPERATURE] == 0.1
        assert chat[semconv.GEN_AI_REQUEST_SEED] == 7
        assert chat[semconv.LLM_COST_USD] > 0
        assert semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS not in chat  # reported as 0
    assert one[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_calls",)
    assert two[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)


def test_openai_next_turn_carries_the_whole_history(telemetry: InMemoryTelemetry) -> None:
    first, second = (
        provider_body("openai_tool_calls.json"),
        provider_body("openai_stop_after_tool.json"),
    )
    replies = [WireResponse(first), WireResponse(second), WireResponse(second)]
    lc = LangChainCallbackHandler(handler=telemetry.handler(capture_content=True))
    config: Any = {"callbacks": [lc], "configurable": {"thread_id": "t-1"}}
    with serve(*replies) as server:
        agent = react_agent(
            openai(server, model="gpt-4o-mini"),
            [add_numbers],
            prompt=SYSTEM,
            checkpointer=InMemorySaver(),
        )
        agent.invoke({"messages": [("user", "What is 5 + 7?")]}, config=config)
        agent.invoke({"messages": [("user", "And doubled?")]}, config=config)
    assert internal_errors(telemetry) == 0
    *_, third = chats(telemetry)
    (call,) = first["choices"][0]["message"]["tool_calls"]
    arguments = json.loads(call["function"]["arguments"])
    answer = second["choices"][0]["message"]["content"]
    assert instructions(third) == [text(SYSTEM)]
    assert loads(third[INPUT]) == [
        user("What is 5 + 7?"),
        assistant([tool_call("add_numbers", call["id"], arguments)]),
        tool_result(call["id"], "12"),
        assistant([text(answer)]),
        user("And doubled?"),
    ]
    assert third[semconv.GEN_AI_CONVERSATION_ID] == "t-1"


def test_images_by_url_are_uri_parts_inline_data_by_type(telemetry: InMemoryTelemetry) -> None:
    photo = "https://images.example/shelf-b.png"
    inline = "data:image/png;base64,iVBORw0KGgo="
    question = [
        {"type": "text", "text": "How many boxes are on this shelf?"},
        {"type": "image_url", "image_url": {"url": photo}},
        {"type": "image", "url": photo, "mime_type": "image/png"},  # LangChain's standard block
        {"type": "image_url", "image_url": {"url": inline}},
    ]
    with serve(WireResponse(provider_body("openai_stop_after_tool.json"))) as server:
        model = openai(server, model="gpt-4o-mini")
        model.invoke(
            [HumanMessage(question)],
            config={
                "callbacks": [
                    LangChainCallbackHandler(handler=telemetry.handler(capture_content=True))
                ]
            },
        )
        sent = server.requests[0].body["messages"][0]["content"]
    assert [p["image_url"]["url"] for p in sent[1:]] == [photo, photo, inline]
    (chat,) = chats(telemetry)
    uri = {"type": "uri", "modality": "image", "uri": photo}
    assert loads(chat[INPUT]) == [
        {
            "role": "user",
            "parts": [
                text("How many boxes are on this shelf?"),
                uri,
                uri,  # langchain-core hands callbacks the OpenAI form of the standard block
                {"type": "image_url"},  # inline bytes: by type only
            ],
        }
    ]
    assert "iVBORw0KGgo" not in every_value(telemetry)


def test_openai_refusal_is_a_refusal_part(telemetry: InMemoryTelemetry) -> None:
    body = provider_body("openai_refusal_field.json")  # content null, the text in message.refusal
    with serve(WireResponse(body)) as server:
        model = openai(server, model="gpt-4o")
        run_turn(telemetry, model, [], "Explain how to pick a lock.", capture=True, path="invoke")
    (chat,) = chats(telemetry)
    refusal = body["choices"][0]["message"]["refusal"]
    assert loads(chat[OUTPUT]) == [assistant([{"type": "refusal", "content": refusal}], "stop")]


def test_openai_streamed_tool_call_arguments_and_usage(telemetry: InMemoryTelemetry) -> None:
    tools_sse = provider_body_bytes("openai_stream_tool_calls.sse")
    answer_sse = provider_body_bytes("openai_stream_stop_after_tool.sse")
    with serve(
        WireResponse(tools_sse, content_type=SSE), WireResponse(answer_sse, content_type=SSE)
    ) as server:
        model = openai(server, model="gpt-4o-mini", stream_usage=True)
        run_turn(telemetry, model, [multiply], "What is 6 times 7?", capture=True, path="stream")
        assert all(r.body["stream_options"] == {"include_usage": True} for r in server.requests)
    _, (call,) = openai_stream_message(tools_sse)
    answer, _ = openai_stream_message(answer_sse)
    one, two = chats(telemetry)
    turn = [tool_call(call["name"], call["id"], call["args"])]
    assert loads(one[OUTPUT]) == [assistant(turn, "tool_calls")]
    assert loads(two[INPUT])[1:] == [assistant(turn), tool_result(call["id"], "42")]
    assert loads(two[OUTPUT]) == [assistant([text(answer)], "stop")]
    assert (one[semconv.GEN_AI_USAGE_INPUT_TOKENS], one[semconv.GEN_AI_USAGE_OUTPUT_TOKENS]) == (
        57,
        18,
    )
    assert (two[semconv.GEN_AI_USAGE_INPUT_TOKENS], two[semconv.GEN_AI_USAGE_OUTPUT_TOKENS]) == (
        88,
        7,
    )
    for chat in (one, two):
        assert chat[semconv.GEN_AI_REQUEST_STREAM] is True
        assert chat[semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] >= 0
        assert chat[semconv.GEN_AI_RESPONSE_MODEL] == "gpt-4o-mini-2024-07-18"
        assert chat[semconv.LLM_PRICING_UNKNOWN] is False
        # langchain-openai keeps no chunk id when streaming chat completions.
        assert semconv.GEN_AI_RESPONSE_ID not in chat


def test_openai_streamed_without_usage_has_unknown_cost(telemetry: InMemoryTelemetry) -> None:
    tools_sse = openai_stream_without_usage(provider_body_bytes("openai_stream_tool_calls.sse"))
    answer_sse = openai_stream_without_usage(
        provider_body_bytes("openai_stream_stop_after_tool.sse")
    )
    with serve(tools_sse, answer_sse) as server:
        model = openai(server, model="gpt-4o-mini", stream_usage=False)
        run_turn(telemetry, model, [multiply], "What is 6 times 7?", capture=False, path="stream")
    for chat in chats(telemetry):
        assert chat[semconv.LLM_PRICING_UNKNOWN] is True  # a priced model, no usage: unknown
        assert semconv.LLM_COST_USD not in chat and semconv.GEN_AI_USAGE_INPUT_TOKENS not in chat
    assert chats(telemetry)[0][semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_calls",)


# --- OpenAI Responses API ----------------------------------------------------------------------

SUMMARY = "The stock tool has the count for sku-42."


def responses_turn() -> tuple[dict[str, Any], dict[str, Any]]:
    first = response(
        "resp_68af01",
        [
            {
                "id": "rs_68af01",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": SUMMARY}],
            },
            {
                "id": "fc_68af01",
                "type": "function_call",
                "status": "completed",
                "arguments": json.dumps({"sku": "sku-42"}),
                "call_id": "call_Q2dx",
                "name": "stock",
            },
        ],
        responses_usage(1310, 1152, 90, 64),
    )
    answer = {"type": "output_text", "text": STOCK_ANSWER, "annotations": []}
    second = response(
        "resp_68af02",
        [
            {
                "id": "msg_68af02",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [answer],
            }
        ],
        responses_usage(1420, 0, 14, 0),
    )
    return first, second


@PATHS
def test_openai_responses_reasoning_summary_function_call_and_answer(
    telemetry: InMemoryTelemetry, path: Path
) -> None:
    first, second = responses_turn()
    reply = responses_stream if path == "stream" else WireResponse
    with serve(reply(first), reply(second)) as server:
        model = openai(server, model="gpt-5-mini", use_responses_api=True, max_tokens=512)
        run_turn(telemetry, model, [stock], STOCK_QUESTION, capture=True, path=path)
        assert [r.path for r in server.requests] == ["/v1/responses"] * 2
    one, two = chats(telemetry)
    turn = [reasoning(SUMMARY), tool_call("stock", "call_Q2dx", {"sku": "sku-42"})]
    # No finish reason on the wire: semconv's from the shape, none on the span.
    assert_stock_turns(one, two, turn, "call_Q2dx", "tool_call", answer_finish="stop")
    assert semconv.GEN_AI_RESPONSE_FINISH_REASONS not in one
    assert (one[semconv.GEN_AI_RESPONSE_ID], two[semconv.GEN_AI_RESPONSE_ID]) == (
        "resp_68af01",
        "resp_68af02",
    )
    assert one[semconv.GEN_AI_RESPONSE_MODEL] == "gpt-5-mini-2025-08-07"
    assert one[semconv.GEN_AI_REQUEST_MAX_TOKENS] == 512
    assert one[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 1310
    assert one[semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 1152
    assert one[semconv.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] == 64
    assert semconv.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS not in two
    price = DEFAULT_PRICES["gpt-5-mini"]
    assert one[semconv.LLM_COST_USD] == pytest.approx(price.cost(1310 - 1152, 90, 1152))
    assert (semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK in one) is (path == "stream")


def test_openai_responses_incomplete_reason_is_the_finish_reason(
    telemetry: InMemoryTelemetry,
) -> None:
    cut = response(
        "resp_68af03",
        [{"id": "rs_68af03", "type": "reasoning", "summary": []}],
        responses_usage(1310, 0, 512, 512),
        status="incomplete",
        incomplete_details={"reason": "max_output_tokens"},
    )
    with serve(WireResponse(cut)) as server:
        model = openai(server, model="gpt-5-mini", use_responses_api=True, max_tokens=512)
        run_turn(telemetry, model, [stock], STOCK_QUESTION, capture=True, path="invoke")
    (chat,) = chats(telemetry)
    assert chat[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ("max_output_tokens",)
    # Only encrypted reasoning, no summary: nothing to show, not an empty reasoning part.
    assert loads(chat[OUTPUT]) == [assistant([], "max_output_tokens")]


def test_openai_responses_web_search_call_is_a_server_tool_call(
    telemetry: InMemoryTelemetry,
) -> None:
    search = {
        "id": "ws_68af04",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "Oslo-7 warehouse opening hours"},
    }
    cited = {"type": "url_citation", "start_index": 0, "end_index": 9, "url": "https://x.test/"}
    said = {"type": "output_text", "text": "Open 8-16.", "annotations": [cited]}
    message = {"id": "msg_68af04", "type": "message", "status": "completed", "role": "assistant"}
    body = response(
        "resp_68af04", [search, {**message, "content": [said]}], responses_usage(310, 0, 40, 0)
    )
    with serve(WireResponse(body)) as server:
        model = openai(server, model="gpt-5-mini", use_responses_api=True)
        run_turn(telemetry, model, [], "When is Oslo-7 open?", capture=True, path="invoke")
    (chat,) = chats(telemetry)
    call = {"type": "web_search", "status": "completed", "action": search["action"]}
    part = {"type": "server_tool_call", "id": "ws_68af04", "name": "web_search"}
    assert loads(chat[OUTPUT]) == [
        assistant([{**part, "server_tool_call": call}, text("Open 8-16.")], "stop")
    ]


def test_openai_responses_refusal_is_one_refusal_part(telemetry: InMemoryTelemetry) -> None:
    refused = {"type": "refusal", "refusal": "I can't help with that."}
    message = {"id": "msg_68af05", "type": "message", "status": "completed", "role": "assistant"}
    body = response(
        "resp_68af05", [{**message, "content": [refused]}], responses_usage(30, 0, 8, 0)
    )
    with serve(WireResponse(body)) as server:
        model = openai(server, model="gpt-5-mini", use_responses_api=True)
        run_turn(telemetry, model, [], "Pick this lock.", capture=True, path="invoke")
    (chat,) = chats(telemetry)
    refusal = {"type": "refusal", "content": "I can't help with that."}
    assert loads(chat[OUTPUT]) == [assistant([refusal], "stop")]  # not twice: kwargs hold it too


# --- Gemini ------------------------------------------------------------------------------------

THOUGHT = "The stock tool answers this."


def gemini_turn(path: Path) -> tuple[WireResponse, WireResponse]:
    so_far = {"promptTokenCount": 212, "thoughtsTokenCount": 44, "cachedContentTokenCount": 128}
    call = {
        "functionCall": {"name": "stock", "args": {"sku": "sku-42"}},
        "thoughtSignature": "CiQB0e2Kb4Y=",
    }
    first = [
        gemini_chunk(
            [{"text": THOUGHT, "thought": True}], {**so_far, "totalTokenCount": 256}, None
        ),
        gemini_chunk(
            [{"text": "Checking the shelf."}],
            {**so_far, "candidatesTokenCount": 4, "totalTokenCount": 260},
            None,
        ),
        # Gemini finishes a function-call turn with STOP.
        gemini_chunk(
            [call], {**so_far, "candidatesTokenCount": 12, "totalTokenCount": 268}, "STOP"
        ),
    ]
    usage = {"promptTokenCount": 240, "candidatesTokenCount": 11, "totalTokenCount": 251}
    second = [gemini_chunk([{"text": STOCK_ANSWER}], usage, "STOP")]
    return gemini_reply(first, path), gemini_reply(second, path)


@PATHS
def test_gemini_thought_function_call_with_stop(telemetry: InMemoryTelemetry, path: Path) -> None:
    with serve(*gemini_turn(path)) as server:
        model = ChatGoogleGenerativeAI(
            model="gemini-2.5-flash",
            google_api_key="k",
            base_url=server.url,
            include_thoughts=True,
            temperature=0.3,
            top_k=20,
            max_output_tokens=1024,
        )
        messages = run_turn(telemetry, model, [stock], STOCK_QUESTION, capture=True, path=path)
    (call_id,) = tool_call_ids(messages)  # Gemini sends no call id; the adapter makes one up
    one, two = chats(telemetry)
    turn = stock_turn(THOUGHT, "Checking the shelf.", call_id)
    assert_stock_turns(one, two, turn, call_id, "STOP")
    assert (
        one[semconv.GEN_AI_RESPONSE_FINISH_REASONS]
        == two[semconv.GEN_AI_RESPONSE_FINISH_REASONS]
        == ("STOP",)
    )
    assert one[semconv.GEN_AI_PROVIDER_NAME] == "gcp.gemini"
    assert one[semconv.GEN_AI_RESPONSE_MODEL] == "gemini-2.5-flash"
    assert (one[semconv.GEN_AI_REQUEST_TEMPERATURE], one[semconv.GEN_AI_REQUEST_TOP_K]) == (0.3, 20)
    assert one[semconv.GEN_AI_REQUEST_MAX_TOKENS] == 1024
    # Output counts the thoughts (LangChain's and semconv's reading), reasoning says how many.
    assert one[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 212
    assert one[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 12 + 44
    assert one[semconv.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] == 44
    assert one[semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 128
    assert (two[semconv.GEN_AI_USAGE_INPUT_TOKENS], two[semconv.GEN_AI_USAGE_OUTPUT_TOKENS]) == (
        240,
        11,
    )
    assert one[semconv.LLM_PRICING_UNKNOWN] is True  # reported usage, but no price for it
    # langchain-google-genai does not keep responseId.
    assert semconv.GEN_AI_RESPONSE_ID not in one


# --- Ollama ------------------------------------------------------------------------------------

OLLAMA_THINKING = "I should ask the stock tool."


@PATHS
def test_ollama_thinking_tool_call_and_answer(telemetry: InMemoryTelemetry, path: Path) -> None:
    first = ollama_reply(
        "Checking.",
        thinking=OLLAMA_THINKING,
        calls=[{"name": "stock", "arguments": {"sku": "sku-42"}}],
    )
    with serve(first, ollama_reply(STOCK_ANSWER)) as server:
        model = ChatOllama(
            model="qwen3:8b", base_url=server.url, reasoning=True, temperature=0.2, stop=["END"]
        )
        messages = run_turn(telemetry, model, [stock], STOCK_QUESTION, capture=True, path=path)
    (call_id,) = tool_call_ids(messages)
    one, two = chats(telemetry)
    # langchain-ollama keeps the thinking in additional_kwargs, not in the content.
    turn = stock_turn(OLLAMA_THINKING, "Checking.", call_id)
    assert_stock_turns(one, two, turn, call_id, "stop")
    for chat in (one, two):
        assert chat[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
        assert chat[semconv.GEN_AI_RESPONSE_MODEL] == "qwen3:8b"
        assert chat[semconv.GEN_AI_PROVIDER_NAME] == "ollama"
        assert (
            chat[semconv.GEN_AI_USAGE_INPUT_TOKENS],
            chat[semconv.GEN_AI_USAGE_OUTPUT_TOKENS],
        ) == (212, 38)
        assert chat[semconv.GEN_AI_REQUEST_TEMPERATURE] == 0.2
        assert chat[semconv.GEN_AI_REQUEST_STOP_SEQUENCES] == ("END",)
        assert chat[semconv.GEN_AI_REQUEST_STREAM] is True  # the adapter always streams
        assert chat[semconv.LLM_PRICING_UNKNOWN] is True


# --- capture off -------------------------------------------------------------------------------


def private_turn(telemetry: InMemoryTelemetry, provider: str, capture: bool) -> tuple[str, ...]:
    """One provider's turn (temperature 0.5, but for gpt-5, which takes none: max tokens 256);
    the content it carried, to look for."""
    question, tools, extra = STOCK_QUESTION, [stock], (STOCK_RESULT, STOCK_ANSWER, "How many")
    if provider == "anthropic":
        first = provider_body("anthropic_thinking_text_tool_use.json")
        second = provider_body("anthropic_end_turn_after_tool.json")
        replies = [WireResponse(first), WireResponse(second)]
        question, tools = "What is the largest city in the user country?", [get_user_country]
        extra = (first["content"][0]["thinking"][:40], first["content"][1]["text"], "Mexico")
        extra += (second["content"][0]["text"][:40], "The country the user is in")

        def make(url: str) -> Any:
            return ChatAnthropic(model=first["model"], base_url=url, api_key="k", temperature=0.5)  # type: ignore[call-arg]

    elif provider == "openai":
        replies = [
            WireResponse(provider_body(f"openai_{n}.json"))
            for n in ("tool_calls", "stop_after_tool")
        ]
        question, tools = "What is 5 + 7?", [add_numbers]
        extra = ("5 + 7 = 12.", "Add two integers")

        def make(url: str) -> Any:
            return ChatOpenAI(
                model="gpt-4o-mini", base_url=f"{url}/v1", api_key="k", temperature=0.5
            )  # type: ignore[arg-type]

    elif provider == "responses":
        replies = [WireResponse(body) for body in responses_turn()]
        extra += (SUMMARY,)

        def make(url: str) -> Any:
            return ChatOpenAI(
                model="gpt-5-mini",
                base_url=f"{url}/v1",
                api_key="k",
                use_responses_api=True,
                max_tokens=256,
            )  # type: ignore[arg-type]

    elif provider == "gemini":
        replies = list(gemini_turn("invoke"))
        extra += (THOUGHT, "Checking the shelf.")

        def make(url: str) -> Any:
            return ChatGoogleGenerativeAI(
                model="gemini-2.5-flash",
                google_api_key="k",
                base_url=url,
                include_thoughts=True,
                temperature=0.5,
            )

    else:
        call = {"name": "stock", "arguments": {"sku": "sku-42"}}
        replies = [
            ollama_reply("Checking.", thinking=OLLAMA_THINKING, calls=[call]),
            ollama_reply(STOCK_ANSWER),
        ]
        extra += (OLLAMA_THINKING,)

        def make(url: str) -> Any:
            return ChatOllama(model="qwen3:8b", base_url=url, reasoning=True, temperature=0.5)

    with serve(*replies) as server:
        run_turn(telemetry, make(server.url), tools, question, capture=capture, path="invoke")
    return (question, SYSTEM, *extra)


@pytest.mark.parametrize("capture", [False, True])
@pytest.mark.parametrize("provider", ["anthropic", "openai", "responses", "gemini", "ollama"])
def test_capture_off_keeps_content_out_and_the_rest_in(
    telemetry: InMemoryTelemetry, provider: str, capture: bool
) -> None:
    markers = private_turn(telemetry, provider, capture)
    found = every_value(telemetry)
    leaked = [marker for marker in markers if marker in found]
    # The same search finds every piece once capture is on: the markers are the content.
    assert leaked == (list(markers) if capture else [])
    names = [s.name for s in telemetry.spans()]
    assert AGENT_SPAN in names and sum(n.startswith("execute_tool") for n in names) == 1
    one, two = chats(telemetry)
    for chat in (one, two):
        content = {
            INPUT,
            OUTPUT,
            semconv.GEN_AI_SYSTEM_INSTRUCTIONS,
            semconv.GEN_AI_TOOL_DEFINITIONS,
        }
        assert (content <= set(chat)) is capture and (content & set(chat) == set()) is not capture
        if provider == "responses":
            assert chat[semconv.GEN_AI_REQUEST_MAX_TOKENS] == 256
        else:
            assert chat[semconv.GEN_AI_REQUEST_TEMPERATURE] == 0.5
        assert chat[semconv.GEN_AI_USAGE_INPUT_TOKENS] > 0
        assert chat[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] > 0
        assert chat[semconv.GEN_AI_RESPONSE_MODEL]
    if provider in ("anthropic", "openai", "responses"):
        assert one[semconv.GEN_AI_RESPONSE_ID] != two[semconv.GEN_AI_RESPONSE_ID]
    if provider != "responses":  # the Responses API sends no finish reason when complete
        assert one[semconv.GEN_AI_RESPONSE_FINISH_REASONS]


# --- odd block shapes ------------------------------------------------------------------------


ODD_BLOCKS: list[Any] = [
    {"type": "reasoning", "summary": "not a list"},
    {"type": "reasoning", "summary": [None, {"text": 3}, {"text": "kept"}]},
    {"type": "server_tool_use", "name": None, "id": 7, "input": {}, "partial_json": "{cut"},
    {"type": "web_search_tool_result", "content": {"encrypted_content": "x", 3: [None]}},
    {"type": "server_tool_result", "tool_call_id": "t", "extras": "not a mapping"},
    {"type": "refusal", "refusal": None},
    {"type": "function_call", "arguments": "{"},
    {"type": "thinking", "thinking": ""},
    "",
    {"type": "image", "url": "https://x.test/a.png", "mime_type": "image/png"},
    {"type": "image", "source": {"type": "base64", "data": "iVBO"}},
]


def test_odd_blocks_are_rendered_without_losing_the_call(telemetry: InMemoryTelemetry) -> None:
    odd = AIMessage(ODD_BLOCKS, additional_kwargs={"reasoning_content": 5, "refusal": " "})
    lc = LangChainCallbackHandler(handler=telemetry.handler(capture_content=True))
    ScriptedChatModel([odd]).invoke("hi", config={"callbacks": [lc]})
    assert internal_errors(telemetry) == 0
    (chat,) = chats(telemetry)
    (message,) = loads(chat[OUTPUT])
    assert message["parts"] == [
        reasoning(""),  # a reasoning block without text still says the model reasoned
        reasoning("kept"),
        {
            "type": "server_tool_call",
            "id": "7",
            "name": "server_tool_use",  # semconv requires a name: the block's type, then
            "server_tool_call": {"type": "server_tool_use", "input": "{cut"},
        },
        {
            "type": "server_tool_call_response",
            "server_tool_call_response": {
                "type": "web_search_tool_result",
                "content": {"3": [None]},
            },
        },
        {
            "type": "server_tool_call_response",
            "id": "t",
            "server_tool_call_response": {"type": "server_tool_result"},
        },
        {"type": "refusal", "content": ""},
        {"type": "tool_call", "name": "", "arguments": "{"},  # no tool_calls: the block's
        reasoning(""),
        {
            "type": "uri",
            "modality": "image",
            "uri": "https://x.test/a.png",
            "mime_type": "image/png",
        },
        {"type": "image"},
    ]
