"""Outcome retention: every failing run's trace exported whole, a share of the healthy ones.

Head sampling decides before a run knows it will bail, so at 1 % it throws away 99 % of the
bailing runs with the healthy ones. ``OutcomeRetentionSpanProcessor`` wraps the processor (or
exporter) that exports spans and holds every span of a trace in process until the trace's local
root span ends. Then it exports the whole trace if the run bailed, errored, was cancelled or
abandoned, fell back to synthesis, looped or had a fabrication detection (``retention_rules``,
plus the marks of ``emit.retention_marks``); any other trace with probability
``healthy_trace_ratio``, decided from the trace id as ``TraceIdRatioBased`` decides, so every
process of a trace decides alike.

Held spans are bounded by count and by (estimated) bytes: past either bound the oldest traces
are decided at once on what they show so far (counted as ``capacity`` decisions); a kept one
then passes its later spans straight through, a dropped one drops them (counted). The processor
never raises into the SDK, is thread-safe, and on ``force_flush`` / ``shutdown`` decides what it
holds before flushing the wrapped processor.
"""

from __future__ import annotations

import threading
import time
from typing import Final

from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter

from symfonic_otel import semconv
from symfonic_otel.emit import retention_marks
from symfonic_otel.export.retention_metrics import observe_retention
from symfonic_otel.export.retention_rules import (
    attributes_of,
    check_ratio,
    estimated_bytes,
    events_of,
    outcome_keeps,
    ratio_bound,
    ratio_keeps,
)
from symfonic_otel.export.span_export import DropCountingBatchSpanProcessor
from symfonic_otel.logs import FailureLog

__all__ = ["DEFAULT_MAX_HELD_BYTES", "DEFAULT_MAX_HELD_SPANS", "OutcomeRetentionSpanProcessor"]

DEFAULT_MAX_HELD_SPANS: Final = 50_000
DEFAULT_MAX_HELD_BYTES: Final = 64 * 1024 * 1024
# Decisions remembered for spans that end after their trace was decided (and for exemplars).
_DECISIONS_REMEMBERED: Final = 65_536
# A root whose foreign run a judge has not settled waits this long at most for its word.
_JUDGE_GRACE_S: Final = 1.0
_KEPT: Final = 1
_UNSAMPLED: Final = 2
_EARLY: Final = 3
_LATE: Final = 4  # dropped early, and then it failed: counted once
_OUR_SCOPE: Final = semconv.SCOPE_NAME
_DECISIONS: Final = (
    ("kept", "outcome"),
    ("kept", "ratio"),
    ("dropped", "ratio"),
    ("kept", "capacity"),
    ("dropped", "capacity"),
)


class _Held:
    """One trace's held spans, their weight, and what is known of its run so far."""

    __slots__ = ("foreign", "judged", "keep", "parked_at", "parked_by", "size", "spans")

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []
        self.size = 0
        self.keep = False  # pragma: no mutate: tested for truth only
        self.foreign = False  # pragma: no mutate: tested for truth only
        self.judged = False  # pragma: no mutate: tested for truth only
        self.parked_at: float | None = None
        self.parked_by = 0  # pragma: no mutate: read only once parked_at is set, with it


class OutcomeRetentionSpanProcessor(SpanProcessor):
    """Holds each trace until its local root ends; exports failing runs whole, healthy ones
    at ``healthy_trace_ratio``.

    ``inner`` is the processor that exports (for example a ``BatchSpanProcessor``) or an
    exporter, which is then wrapped in a batch processor. ``max_held_spans`` /
    ``max_held_bytes`` bound what is held (bytes as estimated from each span's attribute and
    event text plus a fixed overhead); ``meter_provider`` receives the decision and drop
    counters (the global one if None).
    """

    def __init__(
        self,
        inner: SpanProcessor | SpanExporter,
        *,
        healthy_trace_ratio: float,
        max_held_spans: int = DEFAULT_MAX_HELD_SPANS,
        max_held_bytes: int = DEFAULT_MAX_HELD_BYTES,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        name = type(self).__name__
        if isinstance(inner, SpanExporter):
            inner = DropCountingBatchSpanProcessor(inner)
        elif not isinstance(inner, SpanProcessor):
            raise TypeError(
                f"{name}(inner=...) takes a SpanProcessor or a SpanExporter, got {inner!r}"
            )
        ratio = check_ratio(healthy_trace_ratio)
        for option, value in (
            ("max_held_spans", max_held_spans),
            ("max_held_bytes", max_held_bytes),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}({option}=...) must be an int >= 1, got {value!r}")
        self.inner = inner
        self.healthy_trace_ratio = ratio
        self.max_held_spans = max_held_spans
        self.max_held_bytes = max_held_bytes
        self._bound = ratio_bound(ratio)
        self._holding = ratio < 1.0  # at 1.0 every span passes straight through
        self._lock = threading.Lock()
        self._held: dict[int, _Held] = {}  # insertion order: the oldest trace first
        self._decided: dict[int, int] = {}
        self._held_spans = 0
        self._held_bytes = 0
        self._parked = 0  # pragma: no mutate: the count only spares a scan that finds none
        self._closed = False  # pragma: no mutate: tested for truth only
        # Every decision at zero from the start, so ``rate()`` sees the first one.
        self._traces = dict.fromkeys(_DECISIONS, 0)
        self._dropped = dict.fromkeys(
            (semconv.RETENTION_DROP_UNSAMPLED, semconv.RETENTION_DROP_DECIDED_EARLY), 0
        )
        self._late_keeps = 0
        self._failures = FailureLog()
        if self._holding:
            retention_marks.register_retention(self)
        observe_retention(self, meter_provider)

    # --- what is kept -------------------------------------------------------------------------

    def will_export(self, trace_id: int) -> bool:
        """Whether the trace is (or will be) exported, as far as this processor knows now.

        An undecided trace counts as exported only when the ratio keeps it or it is marked;
        exemplars are filtered with this, so they never name a trace that is dropped.
        """
        if not self._holding:
            return True
        code = self._decided.get(trace_id)
        if code is not None:
            return code == _KEPT
        held = self._held.get(trace_id)
        return (held is not None and held.keep) or ratio_keeps(trace_id, self._bound)

    def mark_keep(self, trace_id: int) -> bool:
        """``emit.retention_marks.keep_trace``: keep this trace; False if it was dropped."""
        with self._lock:
            code = self._decided.get(trace_id)
            if code is not None:
                if code == _KEPT:
                    return True
                if code != _LATE:
                    self._late_keeps += 1
                    self._decided[trace_id] = _LATE
                return False
            held = self._held.get(trace_id)
            if held is None:
                return True  # not a trace of this processor's provider
            held.keep = True
            out = self._decide(trace_id, "outcome") if held.parked_at is not None else []
        self._export(out)
        return True

    def judged(self, trace_id: int, keep: bool) -> None:
        """A judge's word on the trace's local root (``emit.retention_marks.trace_judged``)."""
        with self._lock:
            held = self._held.get(trace_id)
            if held is None:
                return
            held.judged = True
            held.keep = held.keep or keep
            out = self._decide(trace_id, "outcome") if held.parked_at is not None else []
        self._export(out)

    # --- the SDK's SpanProcessor interface ----------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            parent = span.parent
            # A trace is known from its local root's start (marks reach it from then on); a
            # child's start needs nothing.
            if (
                self._holding
                and not self._closed
                and (parent is None or parent.is_remote)
                and span.context.trace_flags.sampled
            ):
                trace_id = span.context.trace_id
                out: list[ReadableSpan] = []
                with self._lock:
                    if self._parked:
                        out = self._settle_parked()
                    if trace_id not in self._held and trace_id not in self._decided:
                        self._held[trace_id] = _Held()
                        out += self._enforce_bounds()
                self._export(out)
        except Exception as exc:
            self._failures.report("trace_retention", exc)
        self.inner.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        context = span.context
        if not self._holding or self._closed or context is None or not context.trace_flags.sampled:
            self.inner.on_end(span)
            return
        try:
            out = self._hold(span, context.trace_id)
        except Exception as exc:  # never into the SDK: export it rather than lose it
            self._failures.report("trace_retention", exc)
            out = [span]
        self._export(out)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Decide the traces whose root ended (waiting for a judge), then flush ``inner``."""
        try:
            with self._lock:
                out = self._settle_parked(force=True)
            self._export(out)
        except Exception as exc:  # defensive: deciding raises nothing and the export catches
            self._failures.report("trace_retention", exc)  # pragma: no mutate: unreachable
        return self.inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Decide every held trace on what it shows so far, export the kept ones, shut down."""
        try:
            with self._lock:
                self._closed = True
                out: list[ReadableSpan] = []
                for trace_id in list(self._held):
                    out += self._decide(trace_id, "outcome")
            self._export(out)
        except Exception as exc:  # defensive: deciding raises nothing and the export catches
            self._failures.report("trace_retention", exc)  # pragma: no mutate: unreachable
        self.inner.shutdown()

    # --- counts -------------------------------------------------------------------------------

    @property
    def held_spans(self) -> int:
        return self._held_spans

    @property
    def held_bytes(self) -> int:
        return self._held_bytes

    @property
    def held_traces(self) -> int:
        return len(self._held)

    @property
    def decisions(self) -> dict[tuple[str, str], int]:
        """Traces decided, by (``kept`` / ``dropped``, ``outcome`` / ``ratio`` / ``capacity``);
        only the pairs that occurred."""
        with self._lock:
            return {pair: count for pair, count in self._traces.items() if count}

    @property
    def dropped_spans(self) -> dict[str, int]:
        """Spans not exported, by reason (``unsampled``, ``decided_early``)."""
        with self._lock:
            return dict(self._dropped)

    @property
    def late_keeps(self) -> int:
        return self._late_keeps

    def decision_counts(self) -> dict[tuple[str, str], int]:
        """Every (decision, basis) pair, zero or not (for the counter)."""
        with self._lock:
            return dict(self._traces)

    # --- internals (called with the lock held, except ``_export``) ----------------------------

    def _hold(self, span: ReadableSpan, trace_id: int) -> list[ReadableSpan]:
        attributes = attributes_of(span)
        events = events_of(span)
        keep = outcome_keeps(span, attributes, events)
        size = estimated_bytes(attributes, events)
        parent = span.parent
        is_root = parent is None or parent.is_remote
        scope = span.instrumentation_scope
        foreign = scope is None or scope.name != _OUR_SCOPE
        out: list[ReadableSpan] = []
        with self._lock:
            if self._parked:
                out = self._settle_parked()
            code = self._decided.get(trace_id)
            if code is not None:  # a span ending after its trace was decided
                if code == _KEPT:
                    out.append(span)
                else:
                    reason = semconv.RETENTION_DROP_UNSAMPLED
                    if code != _UNSAMPLED:
                        reason = semconv.RETENTION_DROP_DECIDED_EARLY
                    self._dropped[reason] += 1
                return out
            held = self._held.get(trace_id)
            if held is None:
                held = self._held[trace_id] = _Held()
            held.spans.append(span)
            held.size += size
            if keep:
                held.keep = True
            if foreign:
                held.foreign = True
            self._held_spans += 1
            self._held_bytes += size
            if is_root:
                # A foreign root waits for a judge's word unless its spans already keep it.
                if (
                    held.foreign
                    and not held.keep
                    and not held.judged
                    and retention_marks.judge_awaited(trace_id)
                ):
                    held.parked_at = time.monotonic()
                    held.parked_by = threading.get_ident()
                    self._parked += 1  # pragma: no mutate: as in _decide, a count for a scan
                else:
                    out += self._decide(trace_id, "outcome")
            out += self._enforce_bounds()
        return out

    def _decide(self, trace_id: int, basis: str) -> list[ReadableSpan]:
        """Take the trace out of the held set; its spans if kept (basis ``capacity``: early)."""
        held = self._held.pop(trace_id)
        if held.parked_at is not None:
            self._parked -= 1  # pragma: no mutate: the count only spares a scan that finds none
        self._held_spans -= len(held.spans)
        self._held_bytes -= held.size
        keep = held.keep or ratio_keeps(trace_id, self._bound)
        if basis != "capacity" and not held.keep:
            basis = "ratio"
        decision = "kept" if keep else "dropped"
        self._traces[(decision, basis)] += 1  # every pair is counted from zero
        code = _KEPT if keep else (_EARLY if basis == "capacity" else _UNSAMPLED)
        decided = self._decided
        decided[trace_id] = code
        if len(decided) > _DECISIONS_REMEMBERED:
            del decided[next(iter(decided))]
        if keep:
            return held.spans
        reason = semconv.RETENTION_DROP_UNSAMPLED
        if code == _EARLY:
            reason = semconv.RETENTION_DROP_DECIDED_EARLY
        self._dropped[reason] += len(held.spans)
        return []

    def _enforce_bounds(self) -> list[ReadableSpan]:
        out: list[ReadableSpan] = []
        held = self._held
        while held and (
            self._held_spans > self.max_held_spans
            or self._held_bytes > self.max_held_bytes
            or len(held) > self.max_held_spans
        ):
            out += self._decide(next(iter(held)), "capacity")
        return out

    def _settle_parked(self, *, force: bool = False) -> list[ReadableSpan]:
        """Decide parked roots: all (``force``), or those whose judge had its chance: parked by
        this thread (its dispatch has finished) or longer than the grace ago."""
        out: list[ReadableSpan] = []
        now = time.monotonic()
        me = threading.get_ident()
        for trace_id in [t for t, h in self._held.items() if h.parked_at is not None]:
            held = self._held[trace_id]
            parked_at = held.parked_at or now
            if force or held.parked_by == me or now - parked_at >= _JUDGE_GRACE_S:
                out += self._decide(trace_id, "outcome")
        return out

    def _export(self, spans: list[ReadableSpan]) -> None:
        on_end = self.inner.on_end
        for span in spans:
            try:
                on_end(span)
            except Exception as exc:
                self._failures.report("trace_retention_export", exc)
