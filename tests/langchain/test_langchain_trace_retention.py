"""Outcome retention through the LangChain handler: a capped LangGraph run's trace is exported
whole, an answering run's is not (ratio 0).

LangGraph's prebuilt agent over a scripted model: one run answers after a tool call, one keeps
calling the tool until the ``remaining_steps`` guard ends it (a silent bail). Both run through
``LangChainCallbackHandler`` on a tracer provider whose only exporter sits behind
``OutcomeRetentionSpanProcessor``.
"""

from __future__ import annotations

import warnings
from collections import Counter

from langchain_core.messages import AIMessage
from langgraph.prebuilt import create_react_agent
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from symfonic_otel import (
    LangChainCallbackHandler,
    OTelCallbackHandler,
    OutcomeRetentionSpanProcessor,
    semconv,
)
from symfonic_otel.testing import ScriptedChatModel
from tests.support.langchain_support import add


def _calls(n: int) -> list[AIMessage | str]:
    return [
        AIMessage("", tool_calls=[{"name": "add", "args": {"a": i, "b": 1}, "id": f"c{i}"}])
        for i in range(n)
    ]


def _play(ratio: float) -> tuple[InMemorySpanExporter, dict[str, int]]:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(
        OutcomeRetentionSpanProcessor(SimpleSpanProcessor(exported), healthy_trace_ratio=ratio)
        if ratio < 1.0
        else SimpleSpanProcessor(exported)
    )
    handler = LangChainCallbackHandler(handler=OTelCallbackHandler(tracer_provider=provider))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        answering = create_react_agent(ScriptedChatModel([*_calls(1), "2"]), [add])
        looping = create_react_agent(ScriptedChatModel(_calls(10)), [add])
    question = {"messages": [("user", "1+1?")]}
    answering.invoke(question, config={"callbacks": [handler], "metadata": {"tenant_id": "acme"}})
    looping.invoke(
        question,
        config={"callbacks": [handler], "metadata": {"tenant_id": "globex"}, "recursion_limit": 6},
    )
    provider.shutdown()
    spans = exported.get_finished_spans()
    by_tenant: Counter[str] = Counter()
    for span in spans:
        tenant = (span.attributes or {}).get(semconv.TENANT_ID)
        by_tenant[str(tenant)] += 1
    return exported, dict(by_tenant)


def test_the_capped_run_is_exported_whole_and_the_answering_one_is_not() -> None:
    _, everything = _play(1.0)
    assert everything.get("acme", 0) >= 3 and everything.get("globex", 0) >= 5
    exported, kept = _play(0.0)
    assert kept == {"globex": everything["globex"]}, (kept, everything)
    traces = {span.context.trace_id for span in exported.get_finished_spans()}
    assert len(traces) == 1
    (run,) = [s for s in exported.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert (run.attributes or {}).get(semconv.REACT_TERMINATION_REASON) is not None
