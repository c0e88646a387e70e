"""Starting and ending this package's spans so that another span processor cannot stop a count.

The SDK calls every span processor of a provider in one loop and lets an exception out of
``tracer.start_span`` and ``span.end()``. A third-party processor that raises there (on every
span, say) would then cut the handler's bookkeeping short after the span: a run never counted,
the active-runs gauge left up, bails with no run under them. Caught here instead, the counts
never depend on another processor's health; the failure is logged once per kind.
"""

from __future__ import annotations

from typing import Any, Final

from opentelemetry.trace import INVALID_SPAN, Span, Tracer

from symfonic_otel.logs import FailureLog

__all__ = ["end_span", "start_span"]

_KIND: Final = "symfonic_otel.span_processor_failed"
_failures: Final = FailureLog()


def start_span(tracer: Tracer, name: str, **arguments: Any) -> Span:
    """``tracer.start_span``; a processor raising in ``on_start`` gives a non-recording span
    (the SDK's span is lost with the exception) and the caller goes on."""
    try:
        return tracer.start_span(name, **arguments)
    except Exception as exc:
        _failures.report(_KIND, exc, phase="start")
        return INVALID_SPAN


def end_span(span: Span, end_time_ns: int | None = None) -> None:
    """``span.end``; a processor raising in ``on_end`` leaves the caller's counts whole."""
    end = span.end  # an object that is no span fails here, for its caller to count, as before
    try:
        end(end_time=end_time_ns)
    except Exception as exc:
        _failures.report(_KIND, exc, phase="end")
