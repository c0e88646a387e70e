"""Exemplars that only name traces which are exported.

An exemplar is a link to a trace; one naming a trace that was never exported leads nowhere. Two
things make that happen: no trace exporter at all (the Prometheus-only setup still samples every
span, so the SDK's trace-based filter puts their ids on every histogram), and outcome retention
dropping a healthy run. ``KeptTraceExemplarFilter`` answers for both, per trace id, from the
span processors of the tracer provider as they are at that moment (an exporter added later
counts); it is the SDK histograms' exemplar filter and the per-tenant counters'
(``TenantHub.trace_filter``).
"""

from __future__ import annotations

import weakref

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import ExemplarFilter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.util.types import Attributes

__all__ = ["EXPORTS_NO_SPANS", "KeptTraceExemplarFilter", "exports_spans"]

# Set on span processors that export nothing (the silent-bail span processor only counts).
EXPORTS_NO_SPANS = "symfonic_exports_no_spans"


def _processors(provider: TracerProvider) -> tuple[object, ...] | None:
    multi = getattr(provider, "_active_span_processor", None)
    processors = getattr(multi, "_span_processors", None)
    return processors if isinstance(processors, tuple) else None


def exports_spans(provider: TracerProvider) -> bool:
    """Whether any span processor of ``provider`` may export (one that only counts does not);
    an SDK whose internals moved is taken to export."""
    processors = _processors(provider)
    if processors is None:
        return True
    return any(not getattr(p, EXPORTS_NO_SPANS, False) for p in processors)


class KeptTraceExemplarFilter(ExemplarFilter):
    """Accepts a measurement's span only if a span processor of ``tracer_provider`` exports its
    trace: none that exports, no exemplar; outcome retention, only the traces it keeps (failing
    runs, and healthy runs the ratio keeps); any other processor, every sampled span.

    ``MeterProvider(exemplar_filter=KeptTraceExemplarFilter(tracer_provider), ...)``.
    """

    def __init__(self, tracer_provider: TracerProvider) -> None:
        self._provider = weakref.ref(tracer_provider)

    def links(self, trace_id: int) -> bool:
        """Whether an exemplar may name ``trace_id``."""
        provider = self._provider()
        if provider is None:
            return False
        processors = _processors(provider)
        if processors is None:
            return True
        for processor in processors:
            if getattr(processor, EXPORTS_NO_SPANS, False):
                continue
            will_export = getattr(processor, "will_export", None)
            if will_export is None or will_export(trace_id):
                return True
        return False

    def should_sample(
        self,
        value: float,
        time_unix_nano: int,
        attributes: Attributes,
        context: Context,
    ) -> bool:
        span_context = trace.get_current_span(context).get_span_context()
        if not span_context.is_valid or not span_context.trace_flags.sampled:
            return False
        return self.links(span_context.trace_id)
