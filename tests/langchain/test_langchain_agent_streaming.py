"""Streaming agents on the real LangGraph: each stream mode, ``astream_events``, streams left early.

Each test streams one shape with the handler and checks what was exported: the span tree, the
streamed calls' time to first chunk, content with capture on (``captured``) and none with it off
(``lc``), the run's outcome and verdict, and that the adapter kept no state and swallowed
nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.output_parsers import (
    StrOutputParser,
)
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.prompts import ChatPromptTemplate

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_shapes_support import (
    ANSWER,
    BAILS,
    FIRST_CHUNK_METRIC,
    RUNS,
    TTFC,
    Tree,
    assert_answered,
    assert_clean,
    assert_no_content,
    assert_react_tree,
    attrs,
    cfg,
    one_node_graph,
    research_then_answer,
    texts,
)
from tests.support.langchain_support import (
    AGENT_SPAN,
    add,
    react_agent,
    scripted_agent,
    tool_turn,
)

# --- streaming ------------------------------------------------------------------------------


def test_stream_messages_mode_records_first_chunk_times(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    agent = scripted_agent(tool_turn(), ANSWER)
    chunks = [
        message
        for message, _ in agent.stream(
            {"messages": [("user", "1+2?")]}, config=cfg(captured), stream_mode="messages"
        )
    ]
    assert sum(isinstance(m, AIMessageChunk) for m in chunks) > 2  # the answer came in pieces

    tree = Tree(telemetry.spans())
    assert_react_tree(tree, streamed=True)
    assert_answered(telemetry)
    assert telemetry.value(FIRST_CHUNK_METRIC) == 2
    final = tree.named("chat scripted-chat")[-1]
    assert texts(final, semconv.GEN_AI_OUTPUT_MESSAGES) == [("assistant", ANSWER)]
    assert texts(tree.one(AGENT_SPAN), semconv.GEN_AI_OUTPUT_MESSAGES) == [("assistant", ANSWER)]


def test_stream_messages_mode_without_capture_keeps_content_out(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    agent = scripted_agent(tool_turn(), ANSWER)
    for _ in agent.stream({"messages": [("user", "1+2?")]}, config=cfg(lc), stream_mode="messages"):
        pass
    tree = Tree(telemetry.spans())
    assert_react_tree(tree, streamed=True)
    assert_answered(telemetry)
    assert_no_content(tree.spans)
    assert_clean(telemetry, lc)


def test_stream_updates_mode_is_one_unstreamed_run(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    agent = scripted_agent(tool_turn(), ANSWER)
    updates = list(
        agent.stream({"messages": [("user", "1+2?")]}, config=cfg(captured), stream_mode="updates")
    )
    assert [next(iter(u)) for u in updates] == ["agent", "tools", "agent"]

    tree = Tree(telemetry.spans())
    assert_react_tree(tree, streamed=False)  # LangGraph streams models only for "messages"
    assert_answered(telemetry)
    tool = tree.one("execute_tool add")
    assert json.loads(str(attrs(tool)[semconv.GEN_AI_TOOL_CALL_ARGUMENTS])) == {"a": 1, "b": 2}
    assert json.loads(str(attrs(tool)[semconv.GEN_AI_TOOL_CALL_RESULT])) == "3"


def test_astream_events_v2_records_the_same_run(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    agent = scripted_agent(tool_turn(), ANSWER)

    async def consume() -> set[str]:
        kinds: set[str] = set()
        async for event in agent.astream_events(
            {"messages": [("user", "1+2?")]}, config=cfg(captured), version="v2"
        ):
            kinds.add(event["event"])
        return kinds

    kinds = asyncio.run(consume())
    assert {"on_chat_model_stream", "on_tool_end", "on_chain_end"} <= kinds
    tree = Tree(telemetry.spans())
    assert_react_tree(tree, streamed=True)
    assert_answered(telemetry)


def cancelled_early(telemetry: InMemoryTelemetry) -> None:
    """The run of a stream abandoned after its first chunk: cancelled, no verdict, all closed."""
    tree = Tree(telemetry.spans())
    root = tree.one(AGENT_SPAN)
    assert tree.roots() == [root]
    a = attrs(root)
    assert a[semconv.RUN_OUTCOME] == "cancelled"
    assert a[semconv.RUN_STOP_REASON] == "interrupted"
    assert semconv.RESPONSE_EMPTY not in a
    assert all(tree.parent(s) is root for s in tree.spans if s is not root)
    assert "chat scripted-chat" in {s.name for s in tree.spans}
    assert telemetry.value(BAILS) == 0
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "cancelled"}) == 1


def test_stream_left_after_the_first_chunk_ends_the_run(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    agent = scripted_agent(tool_turn(), ANSWER)
    stream = agent.stream(
        {"messages": [("user", "1+2?")]}, config=cfg(captured), stream_mode="messages"
    )
    with contextlib.closing(stream):
        for _ in stream:
            break
    cancelled_early(telemetry)


def test_astream_left_after_the_first_chunk_ends_the_run(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    agent = scripted_agent(tool_turn(), ANSWER)

    async def consume() -> None:
        stream = agent.astream(
            {"messages": [("user", "1+2?")]}, config=cfg(captured), stream_mode="messages"
        )
        async with contextlib.aclosing(stream):
            async for _ in stream:
                break

    asyncio.run(consume())
    cancelled_early(telemetry)


def test_stream_of_sub_graphs_in_several_modes_streams_each_agents_calls(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel(["found it in the archive", "the final answer is here"])
    app = research_then_answer(one_node_graph("inner", model, "researcher"), model)
    seen = {
        (bool(namespace), mode)
        for namespace, mode, _ in app.stream(
            {"messages": [("user", "q")]},
            config=cfg(captured, run_name="boss"),
            stream_mode=["messages", "updates"],
            subgraphs=True,
        )
    }
    assert {(True, "messages"), (False, "messages"), (True, "updates")} <= seen

    tree = Tree(telemetry.spans())
    boss, researcher = tree.one("invoke_agent boss"), tree.one("invoke_agent researcher")
    assert tree.roots() == [boss] and tree.parent(researcher) is boss
    inner, answer = tree.named("chat scripted-chat")
    assert tree.parent(inner) is researcher and tree.parent(answer) is boss
    for chat in (inner, answer):
        assert attrs(chat)[semconv.GEN_AI_REQUEST_STREAM] is True and TTFC in attrs(chat)
    assert texts(researcher, semconv.GEN_AI_OUTPUT_MESSAGES) == [
        ("assistant", "found it in the archive")
    ]
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 2
    assert telemetry.value(BAILS) == 0


class StallingModel(ScriptedChatModel):
    """Streams its first chunk, then goes quiet (a provider stalled mid-answer)."""

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk
            await asyncio.sleep(5)


def test_astream_left_mid_model_stream_records_the_unfinished_call(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    """Regression: a model call cancelled mid-stream (the consumer left) had no span at all."""
    agent = react_agent(StallingModel([ANSWER]), [add])

    async def consume() -> str:
        stream = agent.astream(
            {"messages": [("user", "1+2?")]}, config=cfg(captured), stream_mode="messages"
        )
        async with contextlib.aclosing(stream):
            async for message, _ in stream:
                return str(message.content)
        return ""

    assert asyncio.run(consume()) == ANSWER[:8]  # the first chunk only
    tree = Tree(telemetry.spans())
    root = tree.one(AGENT_SPAN)
    (chat,) = tree.children(root)
    a = attrs(chat)
    assert chat.name == "chat scripted-chat" and a[semconv.STEP_UNFINISHED] is True
    assert isinstance(a[TTFC], float) and a[TTFC] > 0
    assert semconv.GEN_AI_OUTPUT_MESSAGES not in a
    assert texts(chat) == [("user", "1+2?")]
    assert attrs(root)[semconv.RUN_OUTCOME] == "cancelled"
    assert telemetry.value(FIRST_CHUNK_METRIC) == 1
    assert telemetry.value(BAILS) == 0


def prompt_chain(reply: str) -> Any:
    prompt = ChatPromptTemplate.from_messages([("system", "Be brief."), ("user", "{question}")])
    return prompt | ScriptedChatModel([reply]) | StrOutputParser()


@pytest.mark.parametrize("mode", ["stream", "astream"])
def test_streamed_chain_captures_its_input_known_only_at_the_end(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler, mode: str
) -> None:
    """Regression: a streamed LCEL chain starts with ``{"input": ""}`` (its input is streamed
    in), so the run's captured input was an empty user message."""
    chain, question = prompt_chain("Paris is the capital."), {"question": "Capital of France?"}
    if mode == "stream":
        text = "".join(chain.stream(question, config=cfg(captured)))
    else:

        async def consume() -> str:
            return "".join([c async for c in chain.astream(question, config=cfg(captured))])

        text = asyncio.run(consume())
    assert text == "Paris is the capital."

    tree = Tree(telemetry.spans())
    root = tree.one(AGENT_SPAN)
    (chat,) = tree.children(root)
    assert texts(root) == [("user", "Capital of France?")]
    assert texts(root, semconv.GEN_AI_OUTPUT_MESSAGES) == [("assistant", "Paris is the capital.")]
    assert texts(chat) == [("user", "Capital of France?")]
    assert attrs(chat)[semconv.GEN_AI_REQUEST_STREAM] is True and TTFC in attrs(chat)
    assert_answered(telemetry)


def test_streamed_chain_blank_reply_is_an_empty_answer_without_capture(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    assert "".join(prompt_chain("").stream({"question": "?"}, config=cfg(lc))) == ""
    root = attrs(telemetry.span(AGENT_SPAN))
    assert root[semconv.RUN_OUTCOME] == "completed" and root[semconv.RESPONSE_EMPTY] is True
    assert telemetry.value(RUNS, {semconv.RESPONSE_EMPTY: True}) == 1
    assert telemetry.value(BAILS) == 0  # a blank string is empty, not an agent's bail
    assert_no_content(telemetry.spans())
    assert_clean(telemetry, lc)
