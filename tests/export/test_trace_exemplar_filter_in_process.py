"""Which traces an exemplar may name, from the span processors of a real tracer provider."""

from __future__ import annotations

import gc

from opentelemetry import trace
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from symfonic_otel.export.trace_exemplars import (
    EXPORTS_NO_SPANS,
    KeptTraceExemplarFilter,
    exports_spans,
)

KEPT, DROPPED = 2, 3


class Counting(SpanProcessor):
    """Counts spans, exports none."""


setattr(Counting, EXPORTS_NO_SPANS, True)


class EvenTraces(SpanProcessor):
    """Exports the traces with an even id (a retention rule, as the filter asks it)."""

    def will_export(self, trace_id: int) -> bool:
        return trace_id % 2 == 0


def _provider(*processors: SpanProcessor) -> TracerProvider:
    provider = TracerProvider(shutdown_on_exit=False)  # no exit hook holding it
    for processor in processors:
        provider.add_span_processor(processor)
    return provider


def _context(trace_id: int, sampled: bool = True) -> trace.Context:
    flags = TraceFlags(TraceFlags.SAMPLED if sampled else 0)
    span = NonRecordingSpan(SpanContext(trace_id, 7, is_remote=False, trace_flags=flags))
    return trace.set_span_in_context(span)


def _samples(chooser: KeptTraceExemplarFilter, trace_id: int, sampled: bool = True) -> bool:
    return chooser.should_sample(1.0, 0, {}, _context(trace_id, sampled))


def test_only_counting_processors_link_nothing() -> None:
    provider = _provider(Counting())
    assert not KeptTraceExemplarFilter(provider).links(KEPT)
    assert not exports_spans(provider)
    assert not exports_spans(_provider())


def test_an_exporter_after_a_counting_processor_links_every_trace() -> None:
    provider = _provider(Counting(), SimpleSpanProcessor(InMemorySpanExporter()))
    chooser = KeptTraceExemplarFilter(provider)
    assert chooser.links(KEPT) and chooser.links(DROPPED)
    assert exports_spans(provider)


def test_a_retaining_processor_links_only_the_traces_it_keeps() -> None:
    provider = _provider(Counting(), EvenTraces())
    chooser = KeptTraceExemplarFilter(provider)
    assert chooser.links(KEPT)
    assert not chooser.links(DROPPED)
    assert _samples(chooser, KEPT)
    assert not _samples(chooser, DROPPED)


def test_an_unsampled_span_is_never_an_exemplar() -> None:
    provider = _provider(SimpleSpanProcessor(InMemorySpanExporter()))
    chooser = KeptTraceExemplarFilter(provider)
    assert _samples(chooser, KEPT)
    assert not _samples(chooser, KEPT, sampled=False)


def test_a_collected_tracer_provider_links_nothing() -> None:
    provider = _provider(SimpleSpanProcessor(InMemorySpanExporter()))
    chooser = KeptTraceExemplarFilter(provider)
    del provider
    gc.collect()
    assert not chooser.links(KEPT)


def test_a_provider_with_its_own_span_processor_is_taken_to_export_every_trace() -> None:
    """``TracerProvider(active_span_processor=...)``: no processor list to read, so nothing is
    held back (an exemplar naming a lost trace beats none at all)."""
    provider = TracerProvider(
        active_span_processor=SimpleSpanProcessor(InMemorySpanExporter()), shutdown_on_exit=False
    )
    chooser = KeptTraceExemplarFilter(provider)
    assert chooser.links(KEPT) and chooser.links(DROPPED)
    assert exports_spans(provider)
