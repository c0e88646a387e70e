"""Outcome retention keeps the traces of foreign runs the span processor judges as bailing.

OpenLLMetry's spans of a LangGraph agent carry none of this package's attributes: only the
``SilentBailSpanProcessor`` knows that a run hit its step cap. Its verdict reaches the retention
processor on the same provider, whichever of the two was added first: the bailing run's trace
is exported whole, a healthy one is dropped (ratio 0).
"""

from __future__ import annotations

from collections import Counter

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from symfonic_otel import OutcomeRetentionSpanProcessor, semconv
from tests.support.span_processor_support import ANSWER, CAP_ANSWERED, OPENLLMETRY, rig


@pytest.mark.parametrize("retention_first", [True, False], ids=["retention-first", "judge-first"])
def test_a_foreign_bailing_run_is_exported_whole_and_a_healthy_one_is_not(
    retention_first: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = InMemorySpanExporter()
    retention = OutcomeRetentionSpanProcessor(SimpleSpanProcessor(kept), healthy_trace_ratio=0.0)
    with rig(OPENLLMETRY, False, monkeypatch, installed=False) as peers:
        provider = peers.memory.tracer_provider
        if retention_first:
            provider.add_span_processor(retention)
            provider.add_span_processor(peers.processor)
        else:
            provider.add_span_processor(peers.processor)
            provider.add_span_processor(retention)
        peers.run(CAP_ANSWERED, "globex")
        peers.run(ANSWER, "acme")
        assert peers.bails("globex") == {"tool_calls_with_no_text": 1}
        everything = peers.memory.spans()

    all_traces = Counter(span.context.trace_id for span in everything)
    exported = Counter(span.context.trace_id for span in kept.get_finished_spans())
    assert len(all_traces) == 2 and len(exported) == 1
    ((trace_id, count),) = exported.items()
    assert count == all_traces[trace_id] >= 5  # the whole run, every span of it
    tenants = {
        span.attributes.get(f"{semconv.TRACELOOP_ASSOCIATION_PREFIX}tenant_id")
        for span in kept.get_finished_spans()
        if span.attributes
    }
    assert "globex" in tenants and "acme" not in tenants
    assert retention.held_spans == 0 and retention.held_traces == 0
    assert retention.decisions == {("kept", "outcome"): 1, ("dropped", "ratio"): 1}
