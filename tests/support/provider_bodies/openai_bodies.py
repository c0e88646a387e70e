"""OpenAI chat-completion bodies: the ``chat.completion`` object and its chunk stream.

A ``tool_calls`` turn with ``content`` null, an answer, a structured-output refusal in
``message.refusal``; streamed, the tool call's arguments in fragments, a ``finish_reason`` chunk,
with ``include_usage`` a last chunk of ``"choices":[]`` carrying the usage, then
``data: [DONE]``.
"""

from __future__ import annotations

import json
from typing import Any

MINI = "gpt-4o-mini-2024-07-18"


def _openai_usage(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def completion(
    completion_id: str,
    model: str,
    message: dict[str, Any],
    finish: str,
    usage: dict[str, Any],
    created: int,
) -> dict[str, Any]:
    """A ``chat.completion`` object as the API returns it, around the assistant ``message``."""
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", **message},
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": usage,
        "service_tier": "default",
        "system_fingerprint": "fp_4c2a91d7e0",
    }


def openai_tool_calls() -> dict[str, Any]:
    call = {
        "id": "call_Add5And7Qp3Rs6Tu9Vw2Xy",
        "type": "function",
        "function": {"name": "add_numbers", "arguments": '{"a":5,"b":7}'},
    }
    message = {"content": None, "tool_calls": [call], "refusal": None, "annotations": []}
    return completion(
        "chatcmpl-Tools0Kp2Lm4No6Pq8Rs0Tu2Vw4",
        MINI,
        message,
        "tool_calls",
        _openai_usage(58, 17),
        1_764_000_000,
    )


def openai_stop_after_tool() -> dict[str, Any]:
    message = {"content": "5 + 7 = 12.", "refusal": None, "annotations": []}
    return completion(
        "chatcmpl-Answer1Ab3Cd5Ef7Gh9Ij1Kl3Mn",
        MINI,
        message,
        "stop",
        _openai_usage(86, 8),
        1_764_000_001,
    )


def openai_refusal_field() -> dict[str, Any]:
    message = {"content": None, "refusal": "I'm sorry, but I can't help with that request."}
    body = completion(
        "chatcmpl-Refuse2Bc4De6Fg8Hi0Jk2Lm4No",
        "gpt-4o-2024-08-06",
        message,
        "stop",
        _openai_usage(61, 11),
        1_728_000_000,
    )
    del body["service_tier"]
    return body


def _openai_stream(
    completion_id: str,
    deltas: list[dict[str, Any]],
    finish: str,
    prompt: int,
    completion: int,
) -> bytes:
    """Chunks as the API streams them with ``stream_options.include_usage``."""
    head = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": 1_764_000_100,
        "model": MINI,
        "service_tier": "default",
        "system_fingerprint": "fp_4c2a91d7e0",
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**head, "choices": [choice], "usage": None}

    chunks = [chunk(delta, None) for delta in deltas]
    chunks.append(chunk({}, finish))
    chunks.append({**head, "choices": [], "usage": _openai_usage(prompt, completion)})
    lines = [f"data: {json.dumps(c, separators=(',', ':'))}\n\n" for c in chunks]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


def openai_stream_tool_calls() -> bytes:
    opened = {
        "index": 0,
        "id": "call_Mul6By7Zy8Xw6Vu4Ts2Rq0",
        "type": "function",
        "function": {"name": "multiply", "arguments": ""},
    }
    deltas: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": [opened], "refusal": None}
    ]
    for piece in ('{"', "a", '":', "6", ',"', "b", '":', "7", "}"):
        deltas.append({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
    return _openai_stream("chatcmpl-StrTools3Ef5Gh7Ij9Kl1", deltas, "tool_calls", 57, 18)


def openai_stream_stop_after_tool() -> bytes:
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": "", "refusal": None}]
    deltas += [{"content": piece} for piece in ("6", " times", " 7", " is", " 42", ".")]
    return _openai_stream("chatcmpl-StrAnswer4Fg6Hi8Jk0Lm", deltas, "stop", 88, 7)
