"""``ScriptedChatModel``: replay, recording, binding, streaming, errors."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage

from symfonic_otel.testing import ScriptedChatModel
from symfonic_otel.testing.scripted import ScriptExhaustedError
from tests.support.agent_support import TOOLS, call, turn


async def test_replays_entries_in_order_as_copies() -> None:
    scripted = turn("blocks", call("add", {"a": 1, "b": 2}), finish="tool_calls", usage=(3, 4))
    model = ScriptedChatModel([scripted, "plain"])
    first = await model.ainvoke([HumanMessage(content="q")])
    second = await model.ainvoke("again")
    assert first.tool_calls == scripted.tool_calls
    assert first.usage_metadata == scripted.usage_metadata
    assert first.response_metadata["finish_reason"] == "tool_calls"
    assert first is not scripted
    assert second.content == "plain"
    assert model.remaining == 0
    with pytest.raises(ScriptExhaustedError, match="called 3 times"):
        await model.ainvoke("more")


def test_sync_invoke_and_raising_entries() -> None:
    model = ScriptedChatModel([ValueError("rate limited"), "after"])
    with pytest.raises(ValueError, match="rate limited"):
        model.invoke("q")
    assert model.invoke("q").content == "after"
    assert [c.streamed for c in model.calls] == [False, False]


async def test_bind_tools_shares_script_and_log_and_records_tools() -> None:
    model = ScriptedChatModel(["one", "two"])
    bound = model.bind_tools(list(TOOLS))
    await bound.ainvoke("with tools")
    await model.ainvoke("without")
    assert model.bound_tool_sets == [("add", "lookup", "explode")]
    assert [c.tools for c in model.calls] == [("add", "lookup", "explode"), ()]
    assert [c.tools_bound for c in model.calls] == [True, False]
    assert [c.messages[0].content for c in model.calls] == ["with tools", "without"]


async def test_stream_chunks_text_and_merges_back_to_the_scripted_message() -> None:
    scripted = turn(
        "A longer text to split.", call("lookup", {"key": "k"}), finish="tool_calls", usage=(5, 6)
    )
    model = ScriptedChatModel([scripted], chunk_size=5)
    chunks = [chunk async for chunk in model.astream("q")]
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    assert [c.content for c in chunks if c.content] == ["A lon", "ger t", "ext t", "o spl", "it."]
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged = merged + chunk
    assert merged.content == scripted.content
    assert merged.tool_calls == scripted.tool_calls
    assert merged.usage_metadata == scripted.usage_metadata
    assert merged.response_metadata["finish_reason"] == "tool_calls"
    assert model.calls[0].streamed is True


async def test_stream_of_block_content_keeps_the_blocks() -> None:
    blocks: list[str | dict[Any, Any]] = [
        {"type": "thinking", "thinking": "hm", "signature": "s"},
        {"type": "text", "text": "Answer."},
    ]
    model = ScriptedChatModel([AIMessage(content=blocks)])
    merged = None
    async for chunk in model.astream("q"):
        merged = chunk if merged is None else merged + chunk
    assert merged is not None and merged.content == blocks


def test_rejects_bad_entries() -> None:
    with pytest.raises(TypeError, match="script entries"):
        ScriptedChatModel([42])  # type: ignore[list-item]
