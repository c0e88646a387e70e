"""Under the instrumentor, any retriever's body runs with its ``retrieval`` span current.

Real langchain-core retrievers of our own (``BaseRetriever`` subclasses, one defined before the
instrumentor is on and one after) whose bodies open a span, as a vector store's HTTP client
would; that span must be a child of our ``retrieval`` span, sync and async. With the handler
only in ``callbacks`` nothing is attached, so nothing can fail to detach.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.callbacks.manager import AsyncCallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from opentelemetry.sdk.trace import ReadableSpan
from wrapt import FunctionWrapper

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.instrumentation import SymfonicLangChainInstrumentor
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import (
    AGENT_SPAN,
)

CLIENT_SPAN = "GET /catalogue"


class Catalogue(BaseRetriever):
    """Defined at import, before any ``instrument()``: found by walking the subclasses."""

    tracer: Any

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        with self.tracer.start_as_current_span(CLIENT_SPAN):
            return [Document(page_content=f"{query}: aisle 4")]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        with self.tracer.start_as_current_span(CLIENT_SPAN):
            await asyncio.sleep(0)
            return [Document(page_content=f"{query}: aisle 4")]


def _define_later() -> type[BaseRetriever]:
    """A retriever class created while the instrumentor is on (``__init_subclass__``), with
    only a sync body: ``ainvoke`` runs it through the base class's default async body."""

    class LateCatalogue(BaseRetriever):
        tracer: Any

        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            with self.tracer.start_as_current_span(CLIENT_SPAN):
                return [Document(page_content=f"{query}: aisle 9")]

    return LateCatalogue


pytestmark = pytest.mark.usefixtures("no_detach_errors")


def _retrieval(telemetry: InMemoryTelemetry) -> ReadableSpan:
    (span,) = [
        s
        for s in telemetry.spans()
        if (s.attributes or {}).get(semconv.GEN_AI_OPERATION_NAME) == semconv.OP_RETRIEVAL
    ]
    return span


def _parent_is(child: ReadableSpan, parent: ReadableSpan) -> bool:
    return (
        child.parent is not None
        and parent.context is not None
        and child.parent.span_id == parent.context.span_id
    )


async def _invoke(retriever: BaseRetriever, use_async: bool, **config: Any) -> list[Document]:
    if use_async:
        return await retriever.ainvoke("socks", config=config or None)
    return retriever.invoke("socks", config=config or None)


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize("later", [False, True], ids=["defined-before", "defined-after"])
async def test_span_opened_in_a_retriever_body_is_a_child_of_the_retrieval_span(
    telemetry: InMemoryTelemetry,
    instrumentor: SymfonicLangChainInstrumentor,
    use_async: bool,
    later: bool,
) -> None:
    tracer = telemetry.tracer_provider.get_tracer("catalogue-client")
    retriever = (_define_later() if later else Catalogue)(tracer=tracer)
    documents = await _invoke(retriever, use_async)

    assert [d.page_content for d in documents] == [f"socks: aisle {9 if later else 4}"]
    client = telemetry.span(CLIENT_SPAN)
    retrieval = _retrieval(telemetry)
    assert _parent_is(client, retrieval)
    assert (retrieval.attributes or {})[semconv.RETRIEVAL_DOCUMENT_COUNT] == 1


@pytest.mark.parametrize("use_async", [False, True])
async def test_retriever_in_a_chain_nests_under_the_run(
    telemetry: InMemoryTelemetry, instrumentor: SymfonicLangChainInstrumentor, use_async: bool
) -> None:
    tracer = telemetry.tracer_provider.get_tracer("catalogue-client")
    chain = RunnableLambda(lambda q: f"{q} size 42") | Catalogue(tracer=tracer)
    if use_async:
        await chain.ainvoke("socks")
    else:
        chain.invoke("socks")

    run = telemetry.span(AGENT_SPAN)
    retrieval = _retrieval(telemetry)
    assert _parent_is(retrieval, run)
    assert _parent_is(telemetry.span(CLIENT_SPAN), retrieval)


@pytest.mark.parametrize("use_async", [False, True])
async def test_retriever_with_the_old_body_signature_still_works(
    telemetry: InMemoryTelemetry, instrumentor: SymfonicLangChainInstrumentor, use_async: bool
) -> None:
    """A body without ``run_manager`` gets no context (there is no run to find), and nothing
    else changes: LangChain's own adaptation of such classes still runs."""

    class Legacy(BaseRetriever):
        def _get_relevant_documents(self, query: str) -> list[Document]:  # type: ignore[override]
            return [Document(page_content=query)]

    documents = await _invoke(Legacy(), use_async)
    assert [d.page_content for d in documents] == ["socks"]
    assert (_retrieval(telemetry).attributes or {})[semconv.RETRIEVAL_DOCUMENT_COUNT] == 1


@pytest.mark.parametrize("use_async", [False, True])
async def test_callbacks_alone_make_no_span_current(
    telemetry: InMemoryTelemetry, use_async: bool
) -> None:
    """The callbacks-list path records the retrieval but never attaches (detach-safe)."""
    tracer = telemetry.tracer_provider.get_tracer("catalogue-client")
    handler = LangChainCallbackHandler(handler=telemetry.handler())
    await _invoke(Catalogue(tracer=tracer), use_async, callbacks=[handler])

    assert not _parent_is(telemetry.span(CLIENT_SPAN), _retrieval(telemetry))
    assert telemetry.span(CLIENT_SPAN).parent is None


def test_uninstrument_restores_every_retriever(telemetry: InMemoryTelemetry) -> None:
    originals = {
        "sync": Catalogue.__dict__["_get_relevant_documents"],
        "async": Catalogue.__dict__["_aget_relevant_documents"],
        "default": BaseRetriever.__dict__["_aget_relevant_documents"],
        "hook": BaseRetriever.__dict__["__init_subclass__"],
    }
    instrumentor = SymfonicLangChainInstrumentor()
    instrumentor.instrument(tracer_provider=telemetry.tracer_provider)
    late = _define_later()
    assert isinstance(Catalogue.__dict__["_get_relevant_documents"], FunctionWrapper)
    assert isinstance(Catalogue.__dict__["_aget_relevant_documents"], FunctionWrapper)
    assert isinstance(BaseRetriever.__dict__["_aget_relevant_documents"], FunctionWrapper)
    assert isinstance(late.__dict__["_get_relevant_documents"], FunctionWrapper)
    instrumentor.uninstrument()

    assert {
        "sync": Catalogue.__dict__["_get_relevant_documents"],
        "async": Catalogue.__dict__["_aget_relevant_documents"],
        "default": BaseRetriever.__dict__["_aget_relevant_documents"],
        "hook": BaseRetriever.__dict__["__init_subclass__"],
    } == originals
    assert not isinstance(late.__dict__["_get_relevant_documents"], FunctionWrapper)
    after = _define_later()
    assert not isinstance(after.__dict__["_get_relevant_documents"], FunctionWrapper)
    assert after._new_arg_supported is True  # LangChain's own subclass hook still runs
