"""Graphs in graphs, node spans, retrievers, embeddings, and the trace reaching HTTP servers.

Real LangGraph graphs (a compiled sub-graph as a node), a retriever over langchain-core's
``InMemoryVectorStore`` with ``DeterministicFakeEmbedding``, the real ``ChatOpenAI`` adapter over
a loopback server with the real httpx instrumentation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_ollama import ChatOllama
from langgraph.graph import END, START, MessagesState, StateGraph
from opentelemetry import trace
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
from opentelemetry.sdk.trace import ReadableSpan

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.instrumentation import SymfonicLangChainInstrumentor
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_shapes_support import one_node_graph, research_then_answer
from tests.support.chain_graph_support import chain_graph
from tests.support.langchain_support import AGENT_SPAN, WireServer, langchain_instrumented

OLLAMA_REPLY = "".join(
    json.dumps(line) + "\n"
    for line in (
        {"model": "qwen3:8b", "message": {"role": "assistant", "content": "12"}, "done": False},
        {
            "model": "qwen3:8b",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 30,
            "eval_count": 2,
        },
    )
)


def cfg(handler: LangChainCallbackHandler | None = None, **extra: Any) -> RunnableConfig:
    callbacks = {"callbacks": [handler]} if handler is not None else {}
    return cast(RunnableConfig, {**callbacks, **extra})


def boss_with_researcher(model: BaseChatModel) -> Any:
    """``research`` is a compiled sub-graph (``inner`` node); ``answer`` calls the model."""
    return research_then_answer(one_node_graph("inner", model, graph_name="researcher"), model)


def _boss_run(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> tuple[list[ReadableSpan], dict[str, list[ReadableSpan]]]:
    """Runs ``boss_with_researcher`` as ``boss`` through ``lc``: the spans, and them by name."""
    graph = boss_with_researcher(ScriptedChatModel(["found it", "the answer"]))
    graph.invoke({"messages": [("user", "hi")]}, config=cfg(lc, run_name="boss"))
    spans = telemetry.spans()
    return spans, by_name(spans)


def by_name(spans: list[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        found.setdefault(span.name, []).append(span)
    return found


def parent_of(span: ReadableSpan, spans: list[ReadableSpan]) -> ReadableSpan | None:
    parent = span.parent
    return next(
        (s for s in spans if parent and s.context and s.context.span_id == parent.span_id), None
    )


def test_sub_graph_is_a_named_agent_run_under_its_parent(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    spans, names = _boss_run(telemetry, lc)
    (boss,) = names["invoke_agent boss"]
    (researcher,) = names["invoke_agent researcher"]
    assert (boss.attributes or {})[semconv.GEN_AI_AGENT_NAME] == "boss"
    assert (researcher.attributes or {})[semconv.GEN_AI_AGENT_NAME] == "researcher"
    assert parent_of(researcher, spans) is boss
    inner_chat, answer_chat = names["chat scripted-chat"]
    assert parent_of(inner_chat, spans) is researcher
    assert parent_of(answer_chat, spans) is boss
    assert (researcher.attributes or {})[semconv.RUN_PARENT_ID] == (boss.attributes or {})[
        semconv.RUN_ID
    ]
    assert "invoke_node research" not in names  # node spans are off by default


def test_unnamed_graph_keeps_the_handler_agent_name(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    one_node_graph("agent", ScriptedChatModel(["ok"])).invoke(
        {"messages": [("user", "hi")]}, config=cfg(lc)
    )
    assert semconv.GEN_AI_AGENT_NAME in (telemetry.span(AGENT_SPAN).attributes or {})
    assert (telemetry.span(AGENT_SPAN).attributes or {})[semconv.GEN_AI_AGENT_NAME] == "symfonic"


def test_node_spans_nest_model_calls_and_sub_agents(
    telemetry: InMemoryTelemetry,
) -> None:
    lc = LangChainCallbackHandler(handler=telemetry.handler(), node_spans=True)
    spans, names = _boss_run(telemetry, lc)
    (boss,) = names["invoke_agent boss"]
    (researcher,) = names["invoke_agent researcher"]
    (research,) = names["invoke_node research"]
    (inner,) = names["invoke_node inner"]
    (answer,) = names["invoke_node answer"]
    assert (answer.attributes or {})[semconv.NODE_NAME] == "answer"
    assert (answer.attributes or {})[semconv.GEN_AI_OPERATION_NAME] == semconv.OP_INVOKE_NODE
    assert parent_of(research, spans) is boss and parent_of(answer, spans) is boss
    assert parent_of(researcher, spans) is research
    assert parent_of(inner, spans) is researcher
    inner_chat, answer_chat = names["chat scripted-chat"]
    assert parent_of(inner_chat, spans) is inner
    assert parent_of(answer_chat, spans) is answer
    assert lc.tracked_runs == 0 and lc.tracked_calls == 0


def store() -> InMemoryVectorStore:
    vectors = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    vectors.add_documents([Document("Oslo office", id="d1"), Document("Bergen office", id="d2")])
    return vectors


def rag_graph(model: BaseChatModel, vectors: InMemoryVectorStore) -> Any:
    retriever = vectors.as_retriever(search_kwargs={"k": 1})

    def answer(state: MessagesState) -> dict[str, Any]:
        docs = retriever.invoke(str(state["messages"][-1].content))
        return {"messages": [model.invoke([*state["messages"], ("user", docs[0].page_content)])]}

    return chain_graph(("answer", answer))


def test_retriever_in_a_graph_is_a_retrieval_span_of_the_run(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    rag_graph(ScriptedChatModel(["Oslo."]), store()).invoke(
        {"messages": [("user", "which office?")]}, config=cfg(lc)
    )
    spans = telemetry.spans()
    (retrieval,) = by_name(spans)["retrieval InMemoryVectorStore"]
    root = telemetry.span(AGENT_SPAN)
    assert parent_of(retrieval, spans) is root
    attributes = retrieval.attributes or {}
    assert attributes[semconv.RETRIEVAL_DOCUMENT_COUNT] == 1
    assert attributes[semconv.RUN_ID] == (root.attributes or {})[semconv.RUN_ID]
    assert semconv.GEN_AI_RETRIEVAL_DOCUMENTS not in attributes  # capture off


@pytest.fixture
def instrumented(telemetry: InMemoryTelemetry) -> Iterator[SymfonicLangChainInstrumentor]:
    with langchain_instrumented(telemetry) as instrumentor:
        httpx = HTTPXClientInstrumentor()
        httpx.instrument(tracer_provider=telemetry.tracer_provider)
        try:
            yield instrumentor
        finally:
            httpx.uninstrument()


def test_embeddings_span_under_the_retrieval_under_the_instrumentor(
    telemetry: InMemoryTelemetry, instrumented: SymfonicLangChainInstrumentor
) -> None:
    vectors = store()  # adding documents embeds them: a standalone embeddings call
    rag_graph(ScriptedChatModel(["Oslo."]), vectors).invoke(
        {"messages": [("user", "which office?")]}
    )
    spans = telemetry.spans()
    names = by_name(spans)
    (retrieval,) = names["retrieval InMemoryVectorStore"]
    loose, searched = names["embeddings"]
    assert parent_of(searched, spans) is retrieval
    assert loose.parent is None  # made before any run
    for span, count in ((loose, 2), (searched, 1)):
        attributes = span.attributes or {}
        assert attributes[semconv.GEN_AI_OPERATION_NAME] == "embeddings"
        assert attributes[semconv.EMBEDDINGS_INPUT_COUNT] == count
        assert attributes[semconv.GEN_AI_EMBEDDINGS_DIMENSION_COUNT] == 16
        assert attributes[semconv.LLM_PRICING_UNKNOWN] is True


def test_embeddings_inside_a_run_are_the_runs_tenants(
    telemetry: InMemoryTelemetry, instrumented: SymfonicLangChainInstrumentor
) -> None:
    vectors = store()
    rag_graph(ScriptedChatModel(["Oslo."]), vectors).invoke(
        {"messages": [("user", "which office?")]}, config={"metadata": {"tenant_id": "acme"}}
    )
    loose, searched = by_name(telemetry.spans())["embeddings"]
    assert (searched.attributes or {})[semconv.TENANT_ID] == "acme"
    assert (loose.attributes or {})[semconv.TENANT_ID] != "acme"  # made before the run
    duration = semconv.CLIENT_OPERATION_DURATION.name
    # The histogram carries no tenant; the run's cost series names it.
    assert telemetry.value(duration, {semconv.GEN_AI_OPERATION_NAME: "embeddings"}) == 2
    cost = telemetry.points(semconv.LLM_COST.name, include_zeros=True)
    assert "acme" in {a[semconv.TENANT_ID] for a, _ in cost}


@pytest.mark.parametrize("use_async", [False, True])
def test_traceparent_reaches_the_provider_under_the_instrumentor(
    telemetry: InMemoryTelemetry, instrumented: SymfonicLangChainInstrumentor, use_async: bool
) -> None:
    server = WireServer([OLLAMA_REPLY])
    tracer = trace.get_tracer("app", tracer_provider=telemetry.tracer_provider)
    try:  # langchain-ollama's client is httpx, which the real httpx instrumentation covers
        model = ChatOllama(model="qwen3:8b", base_url=server.url)

        async def acall(state: MessagesState) -> dict[str, Any]:
            with tracer.start_as_current_span("app work"):
                return {"messages": [await model.ainvoke(state["messages"])]}

        def call(state: MessagesState) -> dict[str, Any]:
            with tracer.start_as_current_span("app work"):
                return {"messages": [model.invoke(state["messages"])]}

        graph = StateGraph(MessagesState)
        graph.add_node("agent", acall if use_async else call)  # type: ignore[call-overload]
        graph.add_edge(START, "agent")
        graph.add_edge("agent", END)
        compiled = graph.compile()
        question = {"messages": [("user", "5+7?")]}
        if use_async:
            import asyncio

            asyncio.run(compiled.ainvoke(question))
        else:
            compiled.invoke(question)
    finally:
        server.close()
    spans = telemetry.spans()
    root = telemetry.span(AGENT_SPAN)
    assert root.context is not None
    (app,) = by_name(spans)["app work"]
    assert parent_of(app, spans) is root  # the node body ran with the run span current
    (http,) = [s for s in spans if s.name.startswith("POST")]
    assert parent_of(http, spans) is app
    (header,) = server.traceparents
    assert header is not None
    _, trace_id, span_id, _ = header.split("-")
    assert int(trace_id, 16) == root.context.trace_id
    assert http.context is not None and int(span_id, 16) == http.context.span_id
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing leaked into the caller


def test_callbacks_alone_never_make_a_span_current(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    tracer = trace.get_tracer("app", tracer_provider=telemetry.tracer_provider)

    def call(state: MessagesState) -> dict[str, Any]:
        with tracer.start_as_current_span("app work"):
            return {"messages": [ScriptedChatModel(["ok"]).invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", call)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", END)
    graph.compile().invoke({"messages": [("user", "hi")]}, config=cfg(lc))
    (app,) = by_name(telemetry.spans())["app work"]
    assert app.parent is None  # detach-safe: the callbacks path attaches nothing


class FailingEmbedding(DeterministicFakeEmbedding):
    def embed_query(self, text: str) -> list[float]:
        raise ConnectionError("embedding service down")


async def test_embeddings_async_is_one_call_and_a_failing_call_is_recorded(
    telemetry: InMemoryTelemetry, instrumented: SymfonicLangChainInstrumentor
) -> None:
    # aembed_query delegates to embed_query: the outermost call only is recorded.
    assert len(await DeterministicFakeEmbedding(size=8).aembed_query("q")) == 8
    with pytest.raises(ConnectionError):
        FailingEmbedding(size=8).embed_query("q")
    done, failed = by_name(telemetry.spans())["embeddings"]
    assert (done.attributes or {})[semconv.GEN_AI_EMBEDDINGS_DIMENSION_COUNT] == 8
    assert done.status.status_code is not trace.StatusCode.ERROR
    assert failed.status.status_code is trace.StatusCode.ERROR
    assert (failed.attributes or {})[semconv.ERROR_TYPE] == "ConnectionError"
