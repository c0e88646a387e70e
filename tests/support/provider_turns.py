"""One LangGraph agent turn through a provider's own LangChain adapter, and the wire it is fed.

The adapters (langchain-openai, langchain-anthropic, langchain-google-genai, langchain-ollama)
talk real HTTP to ``wire_server``; what they parse is what the callbacks see. Anthropic and
OpenAI chat-completion bodies are those of ``provider_bodies`` (edits are named where made).
The OpenAI Responses API, Gemini and Ollama bodies are written here
after each provider's API reference (Responses: the ``Response`` object and its streaming
events; Gemini: ``GenerateContentResponse`` and ``streamGenerateContent?alt=sse``; Ollama:
``/api/chat`` NDJSON), with the fields a real reply carries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool

from symfonic_otel import LangChainCallbackHandler
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import internal_errors, react_agent
from tests.support.wire_server import WireResponse

Path = Literal["invoke", "stream"]
SSE = "text/event-stream"
SYSTEM = "You are the stock clerk of warehouse Oslo-7."
STOCK_QUESTION = "Is sku-42 in stock at Oslo-7?"
STOCK_RESULT = "sku-42: 7 units on shelf B"
STOCK_ANSWER = "Yes: sku-42 has 7 units on shelf B."


@tool
def stock(sku: str) -> str:
    """How many units of a SKU the warehouse holds."""
    return STOCK_RESULT


def run_turn(
    telemetry: InMemoryTelemetry,
    model: BaseChatModel,
    tools: Sequence[Any],
    question: str,
    *,
    capture: bool,
    path: Path,
) -> list[BaseMessage]:
    """The prebuilt ReAct agent over ``model``: system prompt, question, tool turn, answer.

    ``stream`` streams the graph in ``messages`` mode, as a chat UI does: LangGraph then makes
    the adapter stream from the provider, whatever the model's own ``streaming`` setting.
    """
    lc = LangChainCallbackHandler(handler=telemetry.handler(capture_content=capture))
    agent = react_agent(model, list(tools), prompt=SYSTEM)
    config = cast(RunnableConfig, {"callbacks": [lc]})
    inputs = {"messages": [("user", question)]}
    if path == "invoke":
        state = agent.invoke(inputs, config=config)
    else:
        state = None
        for mode, data in agent.stream(inputs, config=config, stream_mode=["messages", "values"]):
            if mode == "values":
                state = data
        assert state is not None
    assert lc.tracked_runs == 0 and lc.tracked_calls == 0
    assert internal_errors(telemetry) == 0  # no reader's guard swallowed an error on this shape
    return list(state["messages"])


def tool_call_ids(messages: Sequence[BaseMessage]) -> list[str]:
    """The ids of the tool calls the adapter parsed (Gemini and Ollama send none: made up)."""
    return [
        str(call["id"])
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
    ]


def chats(telemetry: InMemoryTelemetry) -> list[dict[str, Any]]:
    spans = [s for s in telemetry.spans() if s.name.startswith("chat ")]
    return [dict(s.attributes or {}) for s in sorted(spans, key=lambda s: s.start_time or 0)]


def loads(value: object) -> Any:
    assert isinstance(value, str), value
    return json.loads(value)


def every_value(telemetry: InMemoryTelemetry) -> str:
    """Every span name, attribute value and event attribute value, as one text."""
    values: list[str] = []
    for span in telemetry.spans():
        values.append(span.name)
        for attributes in [span.attributes or {}, *((e.attributes or {}) for e in span.events)]:
            for value in attributes.values():
                items = value if isinstance(value, tuple) else (value,)
                values.extend(str(item) for item in items)
    return "\n".join(values)


# --- parts as gen_ai.*.messages records them ---------------------------------------------------


def text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def reasoning(content: str) -> dict[str, Any]:
    return {"type": "reasoning", "content": content}


def tool_call(name: str, call_id: str, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "id": call_id, "arguments": arguments}


def tool_result(call_id: str, response: Any) -> dict[str, Any]:
    return {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": call_id, "response": response}],
    }


def user(content: str) -> dict[str, Any]:
    return {"role": "user", "parts": [text(content)]}


# --- Anthropic and OpenAI: streams of provider_bodies ------------------------------------------


def sse_data(recorded: bytes) -> list[dict[str, Any]]:
    """The JSON payloads of a recorded stream, in order."""
    payloads = []
    for event in recorded.decode().split("\n\n"):
        _, found, data = event.partition("data: ")
        if found and data.strip().startswith("{"):
            payloads.append(json.loads(data))
    return payloads


def anthropic_stream_with_usage(recorded: bytes) -> WireResponse:
    """A recorded stream whose ``message_delta`` carries the cumulative usage Anthropic sends
    today: ``message_start``'s input and cache counts with the final output count (streams of
    2024 models have ``output_tokens`` only there, and langchain-anthropic reads usage from
    ``message_delta`` alone)."""
    start = next(p for p in sse_data(recorded) if p["type"] == "message_start")
    events = recorded.decode().split("\n\n")
    for index, event in enumerate(events):
        head, _, data = event.partition("data: ")
        if data and '"message_delta"' in data:
            payload = json.loads(data)
            payload["usage"] = {**start["message"]["usage"], **payload["usage"]}
            events[index] = f"{head}data: {json.dumps(payload)}"
    return WireResponse("\n\n".join(events).encode(), content_type=SSE)


def anthropic_stream_blocks(recorded: bytes) -> list[dict[str, Any]]:
    """The content blocks a recorded Anthropic stream adds up to (tool input parsed)."""
    blocks: list[dict[str, Any]] = []
    for payload in sse_data(recorded):
        if payload["type"] == "content_block_start":
            blocks.append({**payload["content_block"], "json": ""})
        elif payload["type"] == "content_block_delta":
            delta, block = payload["delta"], blocks[payload["index"]]
            for key, into in (("text", "text"), ("thinking", "thinking"), ("partial_json", "json")):
                if key in delta:
                    block[into] = block.get(into, "") + delta[key]
    for block in blocks:
        if block["type"] == "tool_use":
            block["input"] = json.loads(block["json"] or "{}")
    return blocks


def anthropic_stream(body: dict[str, Any]) -> WireResponse:
    """A Messages response as Anthropic streams it (the documented event sequence): each
    block's start, its deltas (text, thinking and signature, tool input as JSON), its stop."""
    events: list[tuple[str, dict[str, Any]]] = []
    start = {**body, "content": [], "stop_reason": None}
    events.append(("message_start", {"type": "message_start", "message": start}))
    for index, block in enumerate(body["content"]):
        opened, deltas = dict(block), []
        if block["type"] == "text":
            opened["text"] = ""
            deltas = [{"type": "text_delta", "text": block["text"]}]
        elif block["type"] == "thinking":
            opened.update(thinking="", signature="")
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"]}]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif "input" in block:
            opened["input"] = {}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        at = {"index": index}
        events.append(
            ("content_block_start", {"type": "content_block_start", **at, "content_block": opened})
        )
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", **at, "delta": d})
            for d in deltas
        )
        events.append(("content_block_stop", {"type": "content_block_stop", **at}))
    delta = {"stop_reason": body["stop_reason"], "stop_sequence": None}
    events.append(
        ("message_delta", {"type": "message_delta", "delta": delta, "usage": body["usage"]})
    )
    events.append(("message_stop", {"type": "message_stop"}))
    payload = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    return WireResponse(payload, content_type=SSE)


def openai_stream_message(recorded: bytes) -> tuple[str, list[dict[str, Any]]]:
    """(text, tool calls with parsed arguments) a recorded chat-completions stream adds up to."""
    content, calls = "", []
    for payload in sse_data(recorded):
        for choice in payload["choices"]:
            content += choice["delta"].get("content") or ""
            for call in choice["delta"].get("tool_calls") or []:
                if call.get("id"):
                    calls.append({"id": call["id"], "name": call["function"]["name"], "args": ""})
                calls[-1]["args"] += call["function"].get("arguments", "")
    return content, [{**call, "args": json.loads(call["args"])} for call in calls]


# --- OpenAI chat completions: the SSE without its usage chunk --------------------------------


def openai_stream_without_usage(recorded: bytes) -> WireResponse:
    """What the API streams when the client does not ask for usage (no ``include_usage``)."""
    events = [e for e in recorded.decode().split("\n\n") if '"choices":[]' not in e]
    return WireResponse("\n\n".join(events).encode(), content_type=SSE)


# --- OpenAI Responses API ----------------------------------------------------------------------

RESPONSES_MODEL = "gpt-5-mini-2025-08-07"


def response(
    response_id: str, output: list[dict[str, Any]], usage: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """A ``Response`` object (``POST /v1/responses``), as the API reference lists its fields."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": 1_750_000_000,
        "status": "completed",
        "model": RESPONSES_MODEL,
        "output": output,
        "usage": usage,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "temperature": 1.0,
        "top_p": 1.0,
        "text": {"format": {"type": "text"}},
        "reasoning": {"effort": "medium", "summary": "auto"},
        "incomplete_details": None,
        "error": None,
        "instructions": None,
        "max_output_tokens": None,
        "previous_response_id": None,
        "store": True,
        "truncation": "disabled",
        "metadata": {},
        "user": None,
        **extra,
    }


def responses_usage(inputs: int, cached: int, outputs: int, reasoning: int) -> dict[str, Any]:
    return {
        "input_tokens": inputs,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": outputs,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": inputs + outputs,
    }


def responses_stream(body: dict[str, Any]) -> WireResponse:
    """The streaming events of ``body``: created, each output item's added / delta / done
    events, then ``response.completed`` with the whole response."""
    events: list[dict[str, Any]] = []

    def emit(kind: str, **data: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **data})

    skeleton = {**body, "status": "in_progress", "output": [], "usage": None}
    emit("response.created", response=skeleton)
    emit("response.in_progress", response=skeleton)
    for index, item in enumerate(body["output"]):
        where = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "message":
            emit("response.output_item.added", output_index=index, item={**item, "content": []})
            for at, part in enumerate(item["content"]):
                emit(
                    "response.content_part.added",
                    **where,
                    content_index=at,
                    part={**part, "text": ""},
                )
                for start in range(0, len(part["text"]), 8):
                    delta = part["text"][start : start + 8]
                    emit(
                        "response.output_text.delta",
                        **where,
                        content_index=at,
                        delta=delta,
                        logprobs=[],
                    )
                emit(
                    "response.output_text.done",
                    **where,
                    content_index=at,
                    text=part["text"],
                    logprobs=[],
                )
                emit("response.content_part.done", **where, content_index=at, part=part)
        elif item["type"] == "function_call":
            emit("response.output_item.added", output_index=index, item={**item, "arguments": ""})
            emit("response.function_call_arguments.delta", **where, delta=item["arguments"])
            emit("response.function_call_arguments.done", **where, arguments=item["arguments"])
        elif item["type"] == "reasoning":
            emit("response.output_item.added", output_index=index, item={**item, "summary": []})
            for at, part in enumerate(item["summary"]):
                emit(
                    "response.reasoning_summary_part.added",
                    **where,
                    summary_index=at,
                    part={**part, "text": ""},
                )
                emit(
                    "response.reasoning_summary_text.delta",
                    **where,
                    summary_index=at,
                    delta=part["text"],
                )
                emit(
                    "response.reasoning_summary_text.done",
                    **where,
                    summary_index=at,
                    text=part["text"],
                )
                emit("response.reasoning_summary_part.done", **where, summary_index=at, part=part)
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=body)
    payload = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return WireResponse(payload, content_type=SSE)


# --- Gemini: generateContent / streamGenerateContent?alt=sse ----------------------------------


def gemini_chunk(
    parts: list[dict[str, Any]], usage: dict[str, Any], finish: str | None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": "gemini-2.5-flash",
        "responseId": "kI9AaPLdGvWhz7IPnY-R8Qc",
    }


def gemini_reply(chunks: list[dict[str, Any]], path: Path) -> WireResponse:
    """Non-streamed: one body with every part and the last chunk's usage and finish reason;
    streamed: one SSE event per chunk (each with the usage so far, as Gemini sends it)."""
    if path == "stream":
        payload = "".join(f"data: {json.dumps(chunk)}\r\n\r\n" for chunk in chunks)
        return WireResponse(payload, content_type=SSE)
    whole = json.loads(json.dumps(chunks[-1]))
    whole["candidates"][0]["content"]["parts"] = [
        part for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"]
    ]
    return WireResponse(whole)


# --- Ollama: /api/chat, NDJSON (langchain-ollama always streams) ------------------------------


def ollama_reply(
    content: str, *, thinking: str | None = None, calls: Sequence[dict[str, Any]] = ()
) -> WireResponse:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    if calls:
        message["tool_calls"] = [{"function": call} for call in calls]
    lines = [
        {
            "model": "qwen3:8b",
            "created_at": "2025-06-01T10:00:00Z",
            "message": message,
            "done": False,
        },
        {
            "model": "qwen3:8b",
            "created_at": "2025-06-01T10:00:01Z",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "total_duration": 1_204_000_000,
            "load_duration": 21_000_000,
            "prompt_eval_count": 212,
            "prompt_eval_duration": 310_000_000,
            "eval_count": 38,
            "eval_duration": 850_000_000,
        },
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines)
    return WireResponse(body, content_type="application/x-ndjson")
