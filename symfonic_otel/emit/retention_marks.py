"""The "keep this trace" mark: how emitters tell outcome retention that a run must be exported.

Outcome retention (``symfonic_otel.export.retention``) holds every span of a run until the run's
local root span ends and then decides from what the spans show. Some verdicts are not on the
spans: a foreign run (OpenLLMetry, OpenInference, util-genai) that the span processor judges as
bailed carries none of this package's attributes. So whoever knows calls ``keep_trace`` with
the run's span context: the handler at a bail, an error, a synthesis fallback or a fabrication
detection; the span processor when it judges a foreign run; the loop detector at a loop.

``keep_trace`` answers whether the trace will be exported: ``False`` only when a retention
processor already dropped it (its held spans were decided early, past the held-span bounds).
An exemplar is attached only when the answer is ``True``, so it never names a lost trace.

``trace_judged`` is the span processor's word at every local root it sees (kept or not): a
retention processor that reached that root first waits for it, so the processors' order on the
provider does not matter. With no retention processor alive, both cost one tuple check.
"""

from __future__ import annotations

import threading
import weakref
from typing import Protocol

from opentelemetry.trace import SpanContext

__all__ = ["keep_trace", "register_judge", "register_retention", "trace_judged"]


class Retention(Protocol):
    def mark_keep(self, trace_id: int) -> bool: ...

    def judged(self, trace_id: int, keep: bool) -> None: ...


_lock = threading.Lock()
# Copy-on-write tuples: readers iterate a snapshot without the lock.
_retentions: tuple[weakref.ref[Retention], ...] = ()
_judges: tuple[weakref.ref[object], ...] = ()


def register_retention(retention: Retention) -> None:
    """Deliver marks to ``retention`` while it lives (held weakly)."""
    global _retentions
    with _lock:
        alive = tuple(ref for ref in _retentions if ref() is not None)
        _retentions = (*alive, weakref.ref(retention))


def register_judge(judge: object) -> None:
    """``judge`` settles every local root it sees through ``trace_judged`` (held weakly)."""
    global _judges
    with _lock:
        alive = tuple(ref for ref in _judges if ref() is not None)
        _judges = (*alive, weakref.ref(judge))


def judge_awaited(trace_id: int) -> bool:
    """Whether a live judge saw this trace's local root start and has not settled it yet: a
    retention processor then waits for its word. A judge on another provider never saw the
    trace, so it holds nothing up."""
    for ref in _judges:
        judge = ref()
        awaits = getattr(judge, "awaits_root", None)
        if awaits is not None and awaits(trace_id):
            return True
    return False


def keep_trace(span_context: SpanContext | int) -> bool:
    """Mark the trace of ``span_context`` (or a trace id) to be exported whole; never raises.

    Returns ``False`` only when a retention processor has already dropped the trace (decided
    early, past its bounds): the caller then leaves the trace id off its exemplar.
    """
    retentions = _retentions
    if not retentions:
        return True
    try:
        trace_id = span_context if isinstance(span_context, int) else span_context.trace_id
    except Exception:  # a mark must never fail the run that sets it
        return True
    kept = True
    for ref in retentions:
        retention = ref()
        if retention is None:
            continue
        try:
            if not retention.mark_keep(trace_id):
                kept = False
        except Exception:  # one failing processor keeps the mark from none after it
            continue
    return kept


def trace_judged(trace_id: int, keep: bool) -> None:
    """A judge's verdict on the local root of ``trace_id`` (``keep``: it bailed or failed)."""
    for ref in _retentions:
        retention = ref()
        if retention is None:
            continue
        try:
            retention.judged(trace_id, keep)
        except Exception:  # never into the judge, never into the app
            continue
