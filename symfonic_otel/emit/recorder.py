"""Deferred metric recording: the agent's thread queues, the SDK's collection applies.

A synchronous SDK measurement costs tens of microseconds (attribute validation, hashing, locks),
and a run records a dozen of them. Instead, the hot path appends ``(instrument method, value,
attributes)`` to a deque, which is thread-safe and cheap, and the queue is applied to the real
instruments when a metric reader collects: an observable instrument's callback runs at the start
of every collection, before the SDK reads its aggregations, so nothing queued is missed.

The queue is bounded: past ``cap`` pending measurements the oldest is applied inline, so memory
stays flat even when no reader ever collects, and nothing is dropped.

The same hook runs the handlers' housekeeping first (``on_collect``): runs past their TTL are
closed at every collection, so expiry needs no traffic, and what it records is in that collection.

Counter and up-down-counter increments are not queued but summed per series (instrument and
attribute set) and applied as one ``add`` per series per collection. A sum's exported value only
depends on the total of the increments applied before the SDK reads its aggregations, and the
hook drains before every read: cumulative totals and delta increments per interval come out the
same, and shutdown / ``force_flush`` (which collect) lose nothing. It removes most of the SDK's
per-measurement cost (attribute cleaning and hashing) for counters; histograms need every value
and stay queued.

A histogram value may carry a link to the span it describes (a ``chat`` span's duration and
tokens, a tool span's duration): its trace and span ids, kept only for sampled spans (the ones
the SDK's default trace-based exemplar filter keeps). It is applied with that span as its
context, so the SDK's exemplar reservoir links the value to its trace exactly as a synchronous
``record(..., context=...)`` would; only the exemplar's timestamp is that of the collection. The
hot path keeps two ints per value (no span, no context objects alive until the collection);
the context is built at collection, once per span.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.metrics import CallbackOptions, Meter, Observation
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

SpanLink = tuple[int, int]  # (trace id, span id) of a sampled span


class Recordable(Protocol):
    """A histogram: anything with the SDK's ``record(amount, attributes, context=None)``."""

    def record(
        self,
        amount: float,
        attributes: Mapping[str, Any] | None = None,
        context: Context | None = None,
    ) -> None: ...


def span_link(span_context: SpanContext) -> SpanLink | None:
    """What a value keeps of its span: the ids of a sampled span, else nothing."""
    if span_context.trace_flags & TraceFlags.SAMPLED:
        return span_context.trace_id, span_context.span_id
    return None


_HOOK_NAME: Final = "symfonic.telemetry.collection_hook"
DEFAULT_CAP: Final = 16_384
# Distinct counter series summed between collections. Attribute sets are cached and bounded by
# the handler, so this is only reached when no reader ever collects; past it an increment is
# applied inline rather than growing the map.
DEFAULT_SERIES_CAP: Final = 8_192


class Adder(Protocol):
    """A counter or up-down counter: anything with the SDK's ``add(amount, attributes)``."""

    def add(self, amount: float, attributes: Mapping[str, Any] | None = None) -> None: ...


class _Sum:
    """The pending total of one counter series (holds its attributes, so their id stays valid)."""

    __slots__ = ("attributes", "counter", "total")

    def __init__(self, counter: Adder, attributes: Mapping[str, Any], total: float) -> None:
        self.counter = counter
        self.attributes = attributes
        self.total = total


class DeferredRecorder:
    """Queues measurements; drains them into the SDK at collection time (or when full)."""

    __slots__ = (
        "__weakref__",
        "_cap",
        "_last",
        "_lock",
        "_queue",
        "_series_cap",
        "_sums",
        "_tasks",
        "failed",
    )

    def __init__(self, cap: int = DEFAULT_CAP, series_cap: int = DEFAULT_SERIES_CAP) -> None:
        self._cap = cap
        self._series_cap = series_cap
        self.failed = 0
        # The context of the last span applied: a call's duration and tokens share it.
        self._last: tuple[SpanLink, Context] | None = None
        self._queue: deque[tuple[Recordable, float, Mapping[str, Any], SpanLink | None]] = deque()
        # Keyed by identity: the handler reuses one cached dict per attribute set, so identity
        # is a cheap exact key (the entry holds the dict, so its id cannot be reused meanwhile).
        self._sums: dict[tuple[int, int], _Sum] = {}
        # Guards the read-modify-write of a sum and the swap at drain; never held during an SDK
        # call.
        self._lock = threading.Lock()
        # Housekeeping run at each collection, held weakly: a task never keeps its handler alive.
        self._tasks: list[weakref.WeakMethod[Callable[[], object]]] = []

    def on_collect(self, task: Callable[[], object]) -> None:
        """Run the bound method ``task`` at each collection's start, while its object lives."""
        with self._lock:
            self._tasks = [ref for ref in self._tasks if ref() is not None]
            self._tasks.append(weakref.WeakMethod(task))

    def collect(self) -> int:
        """Run the housekeeping tasks, then drain (what the collection hook does)."""
        with self._lock:
            tasks = [ref() for ref in self._tasks]
        for task in tasks:
            if task is None:
                continue
            try:
                task()
            except Exception:  # housekeeping must never break a collection
                self.failed += 1
        return self.drain()

    def add(self, counter: Adder, value: float, attributes: Mapping[str, Any]) -> None:
        """Add ``value`` to the pending sum of the series (``counter``, ``attributes``)."""
        key = (id(counter), id(attributes))
        with self._lock:
            pending = self._sums.get(key)
            if pending is not None:
                pending.total += value
                return
            if len(self._sums) < self._series_cap:
                self._sums[key] = _Sum(counter, attributes, value)
                return
        try:  # no collection for a long time and many series: apply inline, lose nothing
            counter.add(value, attributes)
        except Exception:
            self.failed += 1

    def record(
        self,
        histogram: Recordable,
        value: float,
        attributes: Mapping[str, Any],
        link: SpanLink | None = None,
    ) -> None:
        """Queue ``histogram.record(value, attributes)``; with ``link``, in that span's context.

        The instrument itself is queued, not its bound ``record`` method: one object less per
        value.
        """
        queue = self._queue
        queue.append((histogram, value, attributes, link))
        if len(queue) > self._cap:
            self._apply_one()

    def record_pair(
        self,
        first: Recordable,
        first_value: float,
        second: Recordable,
        second_value: float,
        attributes: Mapping[str, Any],
        link: SpanLink | None = None,
    ) -> None:
        """Two ``record`` calls of one attribute set in one (a run's two call counts)."""
        queue = self._queue
        queue.append((first, first_value, attributes, link))
        queue.append((second, second_value, attributes, link))
        while len(queue) > self._cap:
            self._apply_one()

    def drain(self) -> int:
        """Apply every pending sum and queued measurement; returns how many SDK calls it made."""
        with self._lock:
            sums, self._sums = self._sums, {}
        applied = 0
        for pending in sums.values():
            try:
                pending.counter.add(pending.total, pending.attributes)
            except Exception:
                self.failed += 1
            applied += 1
        while self._apply_one():
            applied += 1
        return applied

    @property
    def pending(self) -> int:
        """Queued measurements plus counter series with a pending sum."""
        return len(self._queue) + len(self._sums)

    def _apply_one(self) -> bool:
        try:
            histogram, value, attributes, link = self._queue.popleft()
        except IndexError:
            return False
        try:
            if link is None:
                histogram.record(value, attributes)
            else:
                last = self._last
                if last is None or last[0] is not link:
                    last = self._last = (link, _link_context(link))
                histogram.record(value, attributes, context=last[1])
        except Exception:  # one bad measurement must not stall the rest of the queue
            self.failed += 1
        return True


_EMPTY_CONTEXT: Final = Context()


_SAMPLED: Final = TraceFlags(TraceFlags.SAMPLED)


def _link_context(link: SpanLink) -> Context:
    span_context = SpanContext(link[0], link[1], is_remote=False, trace_flags=_SAMPLED)
    return trace.set_span_in_context(NonRecordingSpan(span_context), _EMPTY_CONTEXT)


_recorders: weakref.WeakKeyDictionary[Meter, DeferredRecorder] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_hook_ids = itertools.count(1)


def recorder_for(meter: Meter) -> DeferredRecorder:
    """The one recorder of ``meter``: handlers sharing a meter share its queue and its hook.

    The SDK registers an observable instrument name once per meter and ignores the callbacks of
    a second registration, so each hook gets a name of its own: meters that are distinct objects
    but resolve to one SDK meter (the global proxy before a provider is set) still each drain.
    """
    with _lock:
        recorder = _recorders.get(meter)
        if recorder is None:
            recorder = DeferredRecorder()
            _recorders[meter] = recorder

            # The hook keeps its recorder alive as long as the meter: a hook name is registered
            # once per meter, so a recorder made later for the same meter would never drain.
            def collection_hook(
                options: CallbackOptions, recorder: DeferredRecorder = recorder
            ) -> Iterable[Observation]:
                recorder.collect()
                return ()

            meter.create_observable_gauge(
                f"{_HOOK_NAME}.{next(_hook_ids)}",
                callbacks=[collection_hook],
                description="Applies queued measurements; reports nothing itself.",
            )
        return recorder
