"""Model and tool runs outside any agent run the adapter saw: standalone ``chat`` / tool spans.

A handler given to a model's or a tool's constructor only sees that model's or tool's runs, whose
parent (a graph node) it never saw; a bare ``model.invoke`` or ``tool.invoke`` has no parent at
all. Each is recorded as a call of its own under the caller's current span, with the tenant of
its ``metadata`` or ``tenant_scope``. Also: duplicate starts are idempotent.
"""

from __future__ import annotations

from typing import Any, cast
from uuid import uuid4

import pytest
from langchain_core.callbacks import Callbacks
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool
from opentelemetry.sdk.trace import ReadableSpan

from symfonic_otel import LangChainCallbackHandler, semconv, tenant_scope
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import AGENT_SPAN, USAGE, add, broken, react_agent, tool_turn

DURATION = semconv.CLIENT_OPERATION_DURATION.name
TOKENS = semconv.CLIENT_TOKEN_USAGE.name
CHAT = "chat scripted-chat"


def cfg(handler: LangChainCallbackHandler | None = None, **extra: Any) -> RunnableConfig:
    callbacks = {"callbacks": [handler]} if handler is not None else {}
    return cast(RunnableConfig, {**callbacks, **extra})


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: Any) -> int:
    return int(span.get_span_context().span_id)


def test_handler_on_the_models_constructor_inside_create_react_agent(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    final = AIMessage("The sum is 3.", usage_metadata=USAGE)
    model = ScriptedChatModel([tool_turn(), final], callbacks=[lc])
    agent = react_agent(model, [add])
    tracer = telemetry.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("POST /chat") as request:
        result = agent.invoke(
            {"messages": [("user", "1+2")]}, config=cfg(metadata={"tenant_id": "acme"})
        )
    assert result["messages"][-1].content == "The sum is 3."

    chats = [s for s in telemetry.spans() if s.name == CHAT]
    assert len(chats) == 2
    for span in chats:
        attributes = span.attributes or {}
        assert parent_id(span) == span_id(request)
        assert attributes[semconv.TENANT_ID] == "acme"
        assert attributes[semconv.NODE_NAME] == "agent"
        assert attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] == USAGE["input_tokens"]
        assert semconv.RUN_ID not in attributes
    assert not [s for s in telemetry.spans() if s.name == AGENT_SPAN]  # it saw no agent run
    assert telemetry.value(DURATION) == 2
    cost = telemetry.points(semconv.LLM_COST.name, include_zeros=True)
    assert {a[semconv.TENANT_ID] for a, _ in cost} == {"acme"}  # the counters carry the tenant
    assert telemetry.value(TOKENS, {semconv.GEN_AI_TOKEN_TYPE: "output"}) == 2
    assert telemetry.value(semconv.AGENT_RUNS.name) == 0
    assert telemetry.value(semconv.DROPPED_EVENTS.name) == 0


def test_bare_model_call_nests_under_the_callers_span_with_its_tenant(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel(["one", "two", "three"])
    tracer = telemetry.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("job") as job:
        model.invoke("hi", config=cfg(lc, metadata={"tenant_id": "acme"}))
        with tenant_scope("scoped"):
            model.invoke("hi", config=cfg(lc, metadata={"tenant_id": "acme"}))
    model.invoke("hi", config=cfg(lc))

    first, scoped, outside = sorted(
        (s for s in telemetry.spans() if s.name == CHAT), key=lambda s: s.start_time or 0
    )
    assert parent_id(first) == parent_id(scoped) == span_id(job)
    assert outside.parent is None
    assert (first.attributes or {})[semconv.TENANT_ID] == "acme"
    assert (scoped.attributes or {})[semconv.TENANT_ID] == "scoped"
    assert (outside.attributes or {})[semconv.TENANT_ID] == semconv.TENANT_UNKNOWN
    cost = telemetry.points(semconv.LLM_COST.name, include_zeros=True)
    assert {a[semconv.TENANT_ID] for a, _ in cost} == {"acme", "scoped", semconv.TENANT_UNKNOWN}


def test_standalone_tool_run(telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler) -> None:
    tracer = telemetry.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("job") as job:
        assert add.invoke({"a": 1, "b": 2}, config=cfg(lc, metadata={"tenant_id": "acme"})) == 3
    span = telemetry.span("execute_tool add")
    attributes = span.attributes or {}
    assert parent_id(span) == span_id(job)
    assert attributes[semconv.TENANT_ID] == "acme"
    assert attributes[semconv.GEN_AI_OPERATION_NAME] == semconv.OP_EXECUTE_TOOL
    assert semconv.RUN_ID not in attributes


def test_failing_standalone_tool_marks_its_span(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    with pytest.raises(ValueError):
        broken.invoke({"x": 1}, config=cfg(lc))
    span = telemetry.span("execute_tool broken")
    assert (span.attributes or {})[semconv.ERROR_TYPE] == "ValueError"


def test_handler_on_a_tools_constructor_inside_a_graph(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    traced = StructuredTool.from_function(
        func=lambda a, b: a + b, name="add", description="Add.", callbacks=[lc]
    )
    model = ScriptedChatModel([tool_turn(), "3"])
    react_agent(model, [traced]).invoke({"messages": [("user", "1+2")]})
    span = telemetry.span("execute_tool add")
    assert (span.attributes or {})[semconv.GEN_AI_TOOL_CALL_ID] == "c1"
    assert span.parent is None
    assert [s.name for s in telemetry.spans()] == ["execute_tool add"]


def test_model_called_inside_a_standalone_tool_nests_under_it(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel(["forty-two"])

    def ask_model(question: str, callbacks: Callbacks = None) -> str:
        """Ask the model."""
        return str(model.invoke(question, config={"callbacks": callbacks}).content)

    ask = StructuredTool.from_function(func=ask_model, name="ask")

    assert ask.invoke({"question": "?"}, config=cfg(lc, metadata={"tenant_id": "acme"})) == (
        "forty-two"
    )
    tool_span = telemetry.span("execute_tool ask")
    chat = telemetry.span(CHAT)
    assert parent_id(chat) == span_id(tool_span)
    assert (chat.attributes or {})[semconv.TENANT_ID] == "acme"


# --- duplicates --------------------------------------------------------------------------------


def test_duplicate_tool_start_leaves_no_span_open(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    root, tool_run, loose = uuid4(), uuid4(), uuid4()
    lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
    for _ in range(2):
        lc.on_tool_start({"name": "add"}, "", run_id=tool_run, parent_run_id=root)
        lc.on_tool_start({"name": "add"}, "", run_id=loose)
    lc.on_tool_end("3", run_id=tool_run, parent_run_id=root)
    lc.on_tool_end("3", run_id=loose)
    lc.on_chain_end({"messages": [("ai", "3")]}, run_id=root)
    assert len([s for s in telemetry.spans() if s.name == "execute_tool add"]) == 2
    assert telemetry.unended_spans == []


def test_duplicate_model_start_is_one_call(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    root, first, second = uuid4(), uuid4(), uuid4()
    lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
    lc.on_chat_model_start({}, [[]], run_id=first, parent_run_id=root)
    lc.on_chat_model_start({}, [[]], run_id=first, parent_run_id=root)
    lc.on_llm_end(None, run_id=first, parent_run_id=root)
    lc.on_llm_end(None, run_id=first, parent_run_id=root)
    lc.on_chat_model_start({}, [[]], run_id=second, parent_run_id=root)
    lc.on_llm_end(None, run_id=second, parent_run_id=root)
    lc.on_chain_end("done", run_id=root)
    chats = sorted(
        (s for s in telemetry.spans() if s.name.startswith("chat")),
        key=lambda s: s.start_time or 0,
    )
    assert [(s.attributes or {})[semconv.REACT_ITERATION_INDEX] for s in chats] == [0, 1]
