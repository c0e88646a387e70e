"""Exemplars that only name traces which are exported.

An exemplar is a link to a trace; one naming a trace that was never exported leads nowhere. Two
things make that happen: no trace exporter at all (the Prometheus-only setup still samples every
span, so the SDK's trace-based filter puts their ids on every histogram), and outcome retention
dropping a healthy run. ``KeptTraceFilter`` answers for both, per trace id; it is the SDK
histograms' exemplar filter and the per-tenant counters' (``TenantHub.trace_filter``).
"""

from __future__ import annotations

import weakref
from typing import Protocol

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import ExemplarFilter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.util.types import Attributes

__all__ = ["KeptTraceFilter", "exports_spans"]

# Set on span processors that export nothing (the silent-bail span processor only counts).
EXPORTS_NO_SPANS = "symfonic_exports_no_spans"


class Retained(Protocol):
    def will_export(self, trace_id: int) -> bool: ...


def exports_spans(provider: TracerProvider) -> bool:
    """Whether any span processor of ``provider`` may export (one that only counts does not).

    Read from the provider's processor list each time, so an exporter added after
    ``configure_telemetry`` counts; an SDK whose internals moved is taken to export.
    """
    multi = getattr(provider, "_active_span_processor", None)
    processors = getattr(multi, "_span_processors", None)
    if not isinstance(processors, tuple):
        return True
    return any(not getattr(p, EXPORTS_NO_SPANS, False) for p in processors)


class KeptTraceFilter(ExemplarFilter):
    """Accepts a measurement's span only if its trace is exported.

    No exporting span processor on the tracer provider: no exemplar. With outcome retention:
    only traces it keeps (marked failing runs, and healthy runs the ratio keeps).
    """

    def __init__(self, provider: TracerProvider, retention: Retained | None = None) -> None:
        self._provider = weakref.ref(provider)
        self.retention = retention

    def links(self, trace_id: int) -> bool:
        """Whether an exemplar may name ``trace_id``."""
        provider = self._provider()
        if provider is None or not exports_spans(provider):
            return False
        return self.retention is None or self.retention.will_export(trace_id)

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
