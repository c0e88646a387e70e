"""Outcome retention through a framework adapter: the OpenAI Agents SDK run that hits its turn
limit is exported whole, the run that answers is not (ratio 0).

A real ``Runner`` over a scripted model, the adapter's ``SymfonicTracingProcessor`` as the SDK's
trace processor, and the handler's tracer provider exporting only through
``OutcomeRetentionSpanProcessor``.
"""

from __future__ import annotations

from collections import Counter

import pytest
from agents import MaxTurnsExceeded, set_trace_processors
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from symfonic_otel import OTelCallbackHandler, OutcomeRetentionSpanProcessor, tenant_scope
from symfonic_otel.openai_agents import SymfonicTracingProcessor
from tests.support.openai_agents_support import answering, looping, run_agent


def _play(ratio: float) -> Counter[str]:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    inner = SimpleSpanProcessor(exported)
    provider.add_span_processor(
        OutcomeRetentionSpanProcessor(inner, healthy_trace_ratio=ratio) if ratio < 1 else inner
    )
    set_trace_processors(
        [SymfonicTracingProcessor(handler=OTelCallbackHandler(tracer_provider=provider))]
    )
    try:
        with tenant_scope("acme"):
            run_agent(answering())
        with tenant_scope("globex"), pytest.raises(MaxTurnsExceeded):
            run_agent(looping(), max_turns=3)
    finally:
        set_trace_processors([])
    provider.shutdown()
    return Counter(
        str((span.attributes or {}).get("tenant.id")) for span in exported.get_finished_spans()
    )


def test_the_run_past_its_turn_limit_is_exported_whole_and_the_answer_is_not() -> None:
    everything = _play(1.0)
    assert everything["acme"] >= 3 and everything["globex"] >= 6, everything
    assert _play(0.0) == Counter({"globex": everything["globex"]})
