"""Helpers for the agent-shape tests: a handler with capture on, span-tree reading, clean ends."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from typing import Any, cast

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.util.types import AttributeValue
from pydantic import BaseModel

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.chain_graph_support import chain_graph, model_node
from tests.support.langchain_support import AGENT_SPAN, call, internal_errors, model_only_graph

RUNS = semconv.AGENT_RUNS.name
BAILS = semconv.SILENT_BAILS.name
CONTENT_KEYS = (
    semconv.GEN_AI_INPUT_MESSAGES,
    semconv.GEN_AI_OUTPUT_MESSAGES,
    semconv.GEN_AI_SYSTEM_INSTRUCTIONS,
    semconv.GEN_AI_TOOL_DEFINITIONS,
    semconv.GEN_AI_TOOL_CALL_ARGUMENTS,
    semconv.GEN_AI_TOOL_CALL_RESULT,
)


MODES = ("invoke", "ainvoke")


def run_with(mode: str, runnable: Any, value: Any, **kwargs: Any) -> Any:
    """``runnable.invoke(value)``, or its ``ainvoke`` on an event loop of its own."""
    if mode == "invoke":
        return runnable.invoke(value, **kwargs)
    return asyncio.run(runnable.ainvoke(value, **kwargs))


def cfg(handler: LangChainCallbackHandler | None = None, **extra: Any) -> RunnableConfig:
    callbacks = {"callbacks": [handler]} if handler is not None else {}
    return cast(RunnableConfig, {**callbacks, **extra})


def attrs(span: ReadableSpan) -> dict[str, AttributeValue]:
    return dict(span.attributes or {})


def messages(span: ReadableSpan, key: str = semconv.GEN_AI_OUTPUT_MESSAGES) -> list[Any]:
    """A captured message list attribute, decoded (fails when the span has none)."""
    raw = attrs(span)[key]
    assert isinstance(raw, str)
    decoded = json.loads(raw)
    assert isinstance(decoded, list)
    return decoded


def texts(span: ReadableSpan, key: str = semconv.GEN_AI_INPUT_MESSAGES) -> list[tuple[str, str]]:
    """(role, text) of each text part of a captured message list."""
    return [
        (message["role"], part["content"])
        for message in messages(span, key)
        for part in message["parts"]
        if part.get("type") == "text"
    ]


class Tree:
    """The finished spans of a test, with parent lookups by span id."""

    def __init__(self, spans: Sequence[ReadableSpan]) -> None:
        self.spans = sorted(spans, key=lambda s: s.start_time or 0)
        self._by_id = {s.context.span_id: s for s in self.spans if s.context is not None}

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name == name]

    def starting(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name.startswith(prefix)]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, (name, [s.name for s in self.spans])
        return found[0]

    def parent(self, span: ReadableSpan) -> ReadableSpan | None:
        return self._by_id.get(span.parent.span_id) if span.parent is not None else None

    def children(self, span: ReadableSpan) -> list[ReadableSpan]:
        return [s for s in self.spans if self.parent(s) is span]

    def under(self, span: ReadableSpan) -> list[ReadableSpan]:
        """Every span below ``span``, at any depth."""
        found: list[ReadableSpan] = []
        for child in self.children(span):
            found.append(child)
            found.extend(self.under(child))
        return found

    def named_under(self, span: ReadableSpan, name: str) -> list[ReadableSpan]:
        return [s for s in self.under(span) if s.name == name]

    def roots(self) -> list[ReadableSpan]:
        return [s for s in self.spans if self.parent(s) is None]


def assert_clean(telemetry: InMemoryTelemetry, handler: LangChainCallbackHandler) -> None:
    """The adapter kept no state, nothing was swallowed, no span is left open."""
    assert handler.tracked_runs == 0, "adapter kept an agent run"
    assert handler.tracked_calls == 0, "adapter kept child runs"
    assert handler.internal_failures == {}, handler.internal_failures
    assert internal_errors(telemetry) == 0
    assert telemetry.unended_spans == []


def assert_answered(telemetry: InMemoryTelemetry, root_name: str = AGENT_SPAN) -> None:
    root = attrs(telemetry.span(root_name))
    assert root[semconv.RUN_OUTCOME] == "completed"
    assert root[semconv.RESPONSE_EMPTY] is False
    assert semconv.RUN_PAUSED not in root
    assert telemetry.value(BAILS) == 0
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 1


def assert_no_content(spans: Sequence[ReadableSpan]) -> None:
    for span in spans:
        leaked = [k for k in CONTENT_KEYS if k in attrs(span)]
        assert not leaked, (span.name, leaked)


@pytest.fixture
def captured(telemetry: InMemoryTelemetry) -> Iterator[LangChainCallbackHandler]:
    """A handler with content capture on that must end every test clean."""
    handler = LangChainCallbackHandler(handler=telemetry.handler(capture_content=True))
    yield handler
    assert_clean(telemetry, handler)


@pytest.fixture
def noded(telemetry: InMemoryTelemetry) -> Iterator[LangChainCallbackHandler]:
    """``captured`` with ``node_spans=True``."""
    handler = LangChainCallbackHandler(
        handler=telemetry.handler(capture_content=True), node_spans=True
    )
    yield handler
    assert_clean(telemetry, handler)


def one_node_graph(name: str, model: BaseChatModel, graph_name: str | None = None) -> Any:
    """One node ``name`` calling ``model``; the graph is the agent ``graph_name`` when given."""
    return chain_graph((name, model_node(model)), name=graph_name)


def research_tool() -> BaseTool:
    """A ``research`` tool that answers by running a one-node sub-agent graph of its own."""
    inner = model_only_graph(ScriptedChatModel(["inner says 42"]))

    @tool
    def research(topic: str) -> str:
        """Research a topic with a sub-agent."""
        return str(inner.invoke({"messages": [("user", topic)]})["messages"][-1].content)

    return research


def research_then_answer(research: Any, model: BaseChatModel) -> Any:
    """``research`` (a compiled sub-graph or a function) then an ``answer`` model call."""
    return chain_graph(("research", research), ("answer", model_node(model)))


# --- shared by the shape and streaming tests ---------------------------------------------

ANSWER = "The sum of the two numbers is 3."
TTFC = semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK
FIRST_CHUNK_METRIC = semconv.CLIENT_TIME_TO_FIRST_CHUNK.name


class Weather(BaseModel):
    city: str
    temp_c: int


def weather_call(call_id: str = "w1") -> AIMessage:
    return AIMessage("", tool_calls=[call("Weather", {"city": "Paris", "temp_c": 21}, call_id)])


def assert_react_tree(tree: Tree, *, streamed: bool) -> None:
    """One run: two chats and the ``add`` tool directly under it, chats streamed or not."""
    root = tree.one(AGENT_SPAN)
    assert tree.roots() == [root]
    chats = tree.named("chat scripted-chat")
    assert len(chats) == 2
    assert {s.name for s in tree.children(root)} == {"chat scripted-chat", "execute_tool add"}
    assert len(tree.children(root)) == 3
    for chat in chats:
        a = attrs(chat)
        if streamed:
            assert a[semconv.GEN_AI_REQUEST_STREAM] is True
            ttfc = a[TTFC]
            assert isinstance(ttfc, float)
            assert chat.end_time is not None and chat.start_time is not None
            assert 0 < ttfc <= (chat.end_time - chat.start_time) / 1e9
        else:
            assert semconv.GEN_AI_REQUEST_STREAM not in a and TTFC not in a
