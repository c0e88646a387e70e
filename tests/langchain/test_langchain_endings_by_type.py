"""A LangChain run's ending told by its exception's type, and its parts' own readings.

Each exception type gives one outcome, exit and ``error.type``: a LangGraph interrupt pauses
(interrupted, no error; never control flow), a cancellation (``CancelledError``,
``GeneratorExit``) is ``cancelled`` and interrupted with no error type, a step budget that
raises (LangGraph's recursion limit, LangChain's call-limit middleware) is an error with the
``recursion_limit`` exit and a bail, any other exception an error with the ``error`` exit.
A tool's span is named from the callback's ``name`` before the serialized tool's; a standalone
tool or model call is its metadata's tenant's, a run's tool the run's; a call without reported
usage has an unknown cost; a completion model's call is a ``text_completion``.
Driven through the handler's callbacks with the payloads langchain-core sends.
"""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import uuid4

import pytest
from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, Generation, LLMResult
from langgraph.errors import GraphInterrupt, GraphRecursionError

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.emit.pricing import ModelPrice
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def _run_attributes(telemetry: InMemoryTelemetry) -> dict[str, Any]:
    (span,) = [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
    return dict(span.attributes or {})


def _model_limit() -> BaseException:
    return ModelCallLimitExceededError(thread_count=3, run_count=3, thread_limit=3, run_limit=3)


@pytest.mark.parametrize(
    ("error", "outcome", "stop", "error_type", "bails"),
    [
        (GraphInterrupt(()), "completed", "interrupted", None, 0),
        (asyncio.CancelledError(), "cancelled", "interrupted", None, 0),
        (GeneratorExit(), "cancelled", "interrupted", None, 0),
        (GraphRecursionError("limit"), "error", "recursion_limit", "GraphRecursionError", 1),
        (_model_limit(), "error", "recursion_limit", "ModelCallLimitExceededError", 1),
        (ValueError("bad"), "error", "error", "ValueError", 0),
    ],
    ids=["interrupt", "cancelled", "generator_exit", "recursion", "call_limit", "error"],
)
def test_a_runs_ending_is_told_by_its_exceptions_type(
    telemetry: InMemoryTelemetry,
    lc: LangChainCallbackHandler,
    error: BaseException,
    outcome: str,
    stop: str,
    error_type: str | None,
    bails: int,
) -> None:
    root = uuid4()
    lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
    lc.on_chain_error(error, run_id=root)
    run = _run_attributes(telemetry)
    assert run[semconv.RUN_OUTCOME] == outcome
    assert run[semconv.RUN_STOP_REASON] == stop
    assert run.get(semconv.ERROR_TYPE) == error_type
    assert telemetry.value(semconv.SILENT_BAILS.name) == bails


def test_a_tool_is_named_by_the_callbacks_name_before_the_serialized_tools(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    named, unnamed = uuid4(), uuid4()
    lc.on_tool_start({"name": "serialized"}, "x", run_id=named, name="given")
    lc.on_tool_end("ok", run_id=named)
    lc.on_tool_start({"name": "serialized"}, "x", run_id=unnamed)
    lc.on_tool_end("ok", run_id=unnamed)
    names = [s.name for s in telemetry.spans()]
    assert names == ["execute_tool given", "execute_tool serialized"]


def test_a_standalone_tool_is_its_metadatas_tenants_and_a_runs_tool_the_runs(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    loose = uuid4()
    lc.on_tool_start({"name": "loose"}, "x", run_id=loose, metadata={"tenant_id": "t-meta"})
    lc.on_tool_end("ok", run_id=loose)
    root, inner = uuid4(), uuid4()
    lc.on_chain_start({}, {"messages": []}, run_id=root, metadata={"tenant_id": "t-run"})
    lc.on_tool_start(
        {"name": "inner"}, "x", run_id=inner, parent_run_id=root, metadata={"tenant_id": "t-x"}
    )
    lc.on_tool_end("ok", run_id=inner, parent_run_id=root)
    lc.on_chain_end({"messages": [AIMessage("done")]}, run_id=root)
    tenants = {
        s.name: (s.attributes or {}).get(semconv.TENANT_ID)
        for s in telemetry.spans()
        if s.name.startswith("execute_tool")
    }
    assert tenants == {"execute_tool loose": "t-meta", "execute_tool inner": "t-run"}


def _chat(lc: LangChainCallbackHandler, message: AIMessage, **metadata: Any) -> None:
    run = uuid4()
    lc.on_chat_model_start(
        {}, [[HumanMessage("hi")]], run_id=run, metadata={"ls_model_name": "m", **metadata}
    )
    lc.on_llm_end(LLMResult(generations=[[ChatGeneration(message=message)]]), run_id=run)


def test_a_standalone_calls_tenant_and_unknown_cost_without_usage(
    telemetry: InMemoryTelemetry,
) -> None:
    price = ModelPrice(input_per_million=1.0, output_per_million=2.0)
    lc = LangChainCallbackHandler(handler=telemetry.handler(pricing={"m": price}))
    _chat(lc, AIMessage("no usage"), tenant_id="t-call")
    usage = {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}
    _chat(lc, AIMessage("with usage", usage_metadata=usage))  # type: ignore[arg-type]
    first, second = [dict(s.attributes or {}) for s in telemetry.spans()]
    assert first[semconv.TENANT_ID] == "t-call"
    assert first[semconv.LLM_PRICING_UNKNOWN] is True
    assert second.get(semconv.LLM_PRICING_UNKNOWN) is not True


def test_a_completion_models_call_is_a_text_completion(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    run = uuid4()
    lc.on_llm_start({}, ["hi"], run_id=run, metadata={"ls_model_name": "m"})
    lc.on_llm_end(LLMResult(generations=[[Generation(text="hello")]]), run_id=run)
    (span,) = telemetry.spans()
    assert (span.attributes or {})[semconv.GEN_AI_OPERATION_NAME] == "text_completion"
    assert span.name == "text_completion m"


@pytest.mark.parametrize(
    "error", [asyncio.CancelledError(), GraphInterrupt(())], ids=["cancelled", "interrupt"]
)
def test_a_tool_cut_short_by_a_cancel_or_an_interrupt_has_no_error_type(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler, error: BaseException
) -> None:
    root, tool = uuid4(), uuid4()
    lc.on_chain_start({}, {"messages": []}, run_id=root)
    lc.on_tool_start({"name": "slow"}, "x", run_id=tool, parent_run_id=root)
    lc.on_tool_error(error, run_id=tool, parent_run_id=root)
    lc.on_chain_error(error, run_id=root)
    (span,) = [s for s in telemetry.spans() if s.name == "execute_tool slow"]
    assert semconv.ERROR_TYPE not in (span.attributes or {})


def test_a_graph_node_that_raised_ends_its_node_span_with_the_exceptions_type(
    telemetry: InMemoryTelemetry,
) -> None:
    lc = LangChainCallbackHandler(handler=telemetry.handler(), node_spans=True)
    root, ok, failed = uuid4(), uuid4(), uuid4()
    lc.on_chain_start({}, {"messages": []}, run_id=root)
    for node, name in ((ok, "plan"), (failed, "act")):
        lc.on_chain_start(
            {},
            {"messages": []},
            run_id=node,
            parent_run_id=root,
            metadata={"langgraph_node": name},
            tags=["graph:step:1"],
            name=name,
        )
    lc.on_chain_end({"messages": []}, run_id=ok, parent_run_id=root)
    lc.on_chain_error(KeyError("x"), run_id=failed, parent_run_id=root)
    lc.on_chain_error(KeyError("x"), run_id=root)
    nodes = {
        s.name: (s.attributes or {}).get(semconv.ERROR_TYPE)
        for s in telemetry.spans()
        if s.name.startswith(semconv.OP_INVOKE_NODE)
    }
    assert nodes == {"invoke_node plan": None, "invoke_node act": "KeyError"}


def test_a_retrieval_is_named_by_its_own_name_else_its_vector_stores(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    store = {"ls_vector_store_provider": "Chroma"}
    for name in ("VectorStoreRetriever", "docs_search"):
        run = uuid4()
        lc.on_retriever_start({}, "q", run_id=run, metadata=store, name=name)
        lc.on_retriever_end([], run_id=run)
    names = [s.name for s in telemetry.spans()]
    assert names == ["retrieval Chroma", "retrieval docs_search"]
