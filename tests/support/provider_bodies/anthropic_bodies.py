"""Anthropic Messages API bodies: the ``Message`` object and its streaming events.

Content blocks ``text``, ``thinking`` (with its ``signature``), ``tool_use``, ``server_tool_use``
and ``web_search_tool_result``; ``usage`` with the cache counts, their split by TTL in
``cache_creation`` and ``server_tool_use``. Streams: ``message_start``, ``content_block_start``
/ ``_delta`` / ``_stop``, ``ping``, then ``message_delta`` whose ``usage`` holds only
``output_tokens`` (as streams of 2024 models did) and ``message_stop``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

SONNET_4 = "claude-sonnet-4-20250514"
SONNET_45 = "claude-sonnet-4-5-20250929"


def _anthropic_usage(inputs: int, outputs: int, **extra: Any) -> dict[str, Any]:
    return {
        "input_tokens": inputs,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": outputs,
        "service_tier": "standard",
        **extra,
    }


def _message(
    message_id: str, model: str, content: list[dict[str, Any]], stop: str, usage: dict[str, Any]
) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


def _signature(seed: str) -> str:
    """An opaque thinking signature (base64-looking; the API's is encrypted state)."""
    return ("Eq" + seed * 40)[:320] + "=="


def anthropic_stop_sequence() -> dict[str, Any]:
    body = _message(
        "msg_01StopSeqQ7rVw2mXb9Lk4Tz",
        SONNET_45,
        [{"type": "text", "text": "The warehouse nearest the fjord is "}],
        "stop_sequence",
        _anthropic_usage(27, 8),
    )
    body["stop_sequence"] = "Oslo"
    del body["usage"]["cache_creation"]
    return body


def anthropic_max_tokens_cache_write() -> dict[str, Any]:
    """Cut at ``max_tokens`` with the long prompt written to the prompt cache."""
    text = (
        "The inventory report covers three warehouses. Oslo-7 holds the most stock, chiefly "
        "shelving parts and fasteners; Bergen-2 carries seasonal goods and is half full; "
        "Trondheim-1 is being"
    )
    usage = _anthropic_usage(6, 48, cache_creation_input_tokens=15872)
    del usage["cache_creation"], usage["service_tier"]
    return _message(
        "msg_bdrk_01MaxTok8wQeRt5yUi",
        "claude-3-5-haiku-20241022",
        [{"type": "text", "text": text}],
        "max_tokens",
        usage,
    )


def anthropic_thinking_text_tool_use() -> dict[str, Any]:
    thinking = (
        "The user wants the largest city of their country, but I do not know which country "
        "that is. There is a tool that returns it and takes no arguments, so I call it first "
        "and answer once I have the country."
    )
    content = [
        {"type": "thinking", "thinking": thinking, "signature": _signature("Thk1")},
        {"type": "text", "text": "I will look up which country you are in first."},
        {
            "type": "tool_use",
            "id": "toolu_01CountryLkp5sDf8Gh2Jk",
            "name": "get_user_country",
            "input": {},
        },
    ]
    usage = _anthropic_usage(412, 131, inference_geo="not_available")
    return _message("msg_01ThinkTool3nMb6Vc9Xz", SONNET_4, content, "tool_use", usage)


def anthropic_end_turn_after_tool() -> dict[str, Any]:
    text = (
        "You are in Mexico, and its largest city is Mexico City, the capital, with more than "
        "nine million people in the city proper and over twenty million in its metropolitan "
        "area."
    )
    usage = _anthropic_usage(581, 47, inference_geo="not_available")
    return _message(
        "msg_01AnswerAft2Qw4Er6Ty", SONNET_4, [{"type": "text", "text": text}], "end_turn", usage
    )


_QUERIES = (
    "Oslo weather today",
    "Oslo ferry timetable",
    "Bergen rail strike",
    "Norway fuel prices",
    "Trondheim road closures",
    "Oslo air quality",
    "Bergen harbour events",
)


def _search_results(query: str, index: int) -> list[dict[str, Any]]:
    slug = query.lower().replace(" ", "-")
    return [
        {
            "type": "web_search_result",
            "url": f"https://news{n}.example/{slug}",
            "title": f"{query}: report {n}",
            "encrypted_content": f"EnQ{index}{n}" + "Zx9Kw2Lm" * 200,
            "page_age": f"{n + 1} hours ago",
        }
        for n in range(10)
    ]


def anthropic_pause_turn() -> dict[str, Any]:
    """Server-side web searches until the turn pauses: thinking, text, search and result pairs
    with texts between them, ending on a search whose result has not come back."""
    content: list[dict[str, Any]] = [
        {
            "type": "thinking",
            "thinking": "Seven searches are asked for; I run them one after the other.",
            "signature": _signature("Pse2"),
        },
        {"type": "text", "text": "I'll search for each topic in turn."},
    ]
    for index, query in enumerate(_QUERIES):
        if index == 4:
            content.append({"type": "text", "text": "Four done; the road and air searches next."})
        if index == 6:
            content.append({"type": "text", "text": "One more search for the harbour."})
        use_id = f"srvtoolu_01Search{index}Ab3Cd5Ef"
        content.append(
            {
                "type": "server_tool_use",
                "id": use_id,
                "name": "web_search",
                "input": {"query": query},
            }
        )
        content.append(
            {
                "type": "web_search_tool_result",
                "tool_use_id": use_id,
                "content": _search_results(query, index),
            }
        )
    content.append(
        {
            "type": "server_tool_use",
            "id": "srvtoolu_01Search7Ab3Cd5Ef",
            "name": "web_search",
            "input": {"query": "Oslo weekend markets"},
        }
    )
    usage = _anthropic_usage(151_220, 655, server_tool_use={"web_search_requests": 7})
    return _message("msg_01PauseTurn8Hj2Kl4Mn", SONNET_45, content, "pause_turn", usage)


# --- Anthropic streams ---------------------------------------------------------------------------


def _sse(events: list[dict[str, Any]]) -> bytes:
    return "".join(
        f"event: {e['type']}\ndata: {json.dumps(e, separators=(',', ':'))}\n\n" for e in events
    ).encode()


def _pieces(text: str, size: int) -> Iterator[str]:
    return (text[at : at + size] for at in range(0, len(text), size))


def _anthropic_stream(
    message_id: str,
    model: str,
    blocks: list[dict[str, Any]],
    stop: str,
    inputs: int,
    outputs: int,
) -> bytes:
    start_usage = {
        "input_tokens": inputs,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 1,
        "service_tier": "standard",
    }
    message = {**_message(message_id, model, [], stop, start_usage), "stop_reason": None}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
    for index, block in enumerate(blocks):
        at = {"index": index}
        deltas: list[dict[str, Any]]
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], 11)]
        elif block["type"] == "thinking":
            opened = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"], 13)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:
            opened = {**block, "input": {}}
            arguments = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [
                {"type": "input_json_delta", "partial_json": p} for p in _pieces(arguments, 9)
            ]
        events.append({"type": "content_block_start", **at, "content_block": opened})
        if index == 0:
            events.append({"type": "ping"})
        events += [{"type": "content_block_delta", **at, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", **at})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": outputs},
        }
    )
    events.append({"type": "message_stop"})
    return _sse(events)


def anthropic_stream_text_two_tool_use() -> bytes:
    blocks = [
        {"type": "text", "text": "I'll check the weather and the local time for you."},
        {
            "type": "tool_use",
            "id": "toolu_01WeatherSf2Gh4Jk6L",
            "name": "get_weather",
            "input": {"location": "San Francisco, CA"},
        },
        {
            "type": "tool_use",
            "id": "toolu_01TimeSf8Zx6Cv4Bn2M",
            "name": "get_time",
            "input": {"timezone": "America/Los_Angeles"},
        },
    ]
    return _anthropic_stream(
        "msg_01StreamTools5Rt7Yu9", "claude-3-5-sonnet-20240620", blocks, "tool_use", 488, 141
    )


def anthropic_stream_thinking_text() -> bytes:
    blocks = [
        {
            "type": "thinking",
            "thinking": "Both tools answered: sunny in San Francisco, and it is noon there. "
            "I can say both in one sentence.",
            "signature": _signature("Str3"),
        },
        {"type": "text", "text": "It is sunny in San Francisco, and the local time is noon."},
    ]
    return _anthropic_stream(
        "msg_01StreamThink1Qw3Er5", "claude-3-7-sonnet-20250219", blocks, "end_turn", 61, 198
    )
