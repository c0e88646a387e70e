"""A run's two call histograms, aggregated in process and handed to every reader at collection.

``gen_ai.invoke_agent.inference_calls`` and ``gen_ai.invoke_agent.tool_calls`` get two values
per run. The SDK's ``Histogram.record`` costs ~8 us a value here (attribute cleaning, hashing,
locks, exemplar sampling), more than the rest of loop tracking together. So, where
``reader_hook`` is installed, the run's end appends one tuple to a deque (thread-safe, no lock),
and each collection folds what is queued into per-set arrays under one lock (bucket counts for
the advised boundaries, count, sum, min, max, the latest exemplar per bucket) and builds one
``HistogramDataPoint`` per set for the collecting reader, as the SDK would: cumulative since the
set's start, or, under the delta preference, what that reader did not see yet (no point for a
set without new values). Each reader has its own view of what it saw (its delta, its
exemplars), so two readers never take each other's values.

Bounded: past ``QUEUE_CAP`` queued runs the recording thread folds (nothing is dropped); past
``MAX_SETS`` attribute sets per histogram new sets go to the SDK's overflow set
(``otel.metric.overflow=true``), as the SDK's cardinality limit does.
"""

from __future__ import annotations

import threading
import time
import weakref
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Mapping
from operator import add
from typing import Any, Final

from opentelemetry.sdk.metrics import Exemplar
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricReader,
    MetricsData,
    ResourceMetrics,
    ScopeMetrics,
)

from symfonic_otel import semconv
from symfonic_otel.emit.recorder import SpanLink

SPECS: Final = (semconv.INVOKE_AGENT_INFERENCE_CALLS, semconv.INVOKE_AGENT_TOOL_CALLS)
BOUNDS: Final = tuple(semconv.CALL_COUNT_BUCKETS)  # as the SDK keeps the advice: ints
QUEUE_CAP: Final = 16_384
MAX_SETS: Final = 20_000
_OVERFLOW: Final = ((semconv.METRIC_OVERFLOW, True),)
_DELTA = AggregationTemporality.DELTA
_CUMULATIVE = AggregationTemporality.CUMULATIVE

Key = frozenset[tuple[str, Any]]
# What a run's end queues: its attribute set, model calls, tool calls (None: not known), link.
Queued = tuple[Mapping[str, Any], int, int | None, SpanLink | None]


class _Acc:
    """One attribute set's values: bucket counts, count, sum, min, max, exemplar per bucket."""

    __slots__ = ("attributes", "buckets", "count", "exemplars", "max", "min", "start_ns", "sum")

    def __init__(self, attributes: Mapping[str, Any], start_ns: int) -> None:
        self.attributes = dict(attributes)
        self.start_ns = start_ns
        self.buckets = [0] * (len(BOUNDS) + 1)
        self.count = 0
        self.sum: float = 0
        self.min = float("inf")  # pragma: no mutate: float() reads "INF" alike
        self.max = float("-inf")  # pragma: no mutate: float() reads "-INF" alike
        self.exemplars: dict[int, tuple[int, int, float, int]] = {}

    def add(self, value: float, bucket: int) -> None:
        self.buckets[bucket] += 1
        self.count += 1
        self.sum += value
        if value < self.min:  # pragma: no mutate: an equal value leaves the min as it is
            self.min = value
        if value > self.max:  # pragma: no mutate: an equal value leaves the max as it is
            self.max = value


class _View:
    """What one reader has not seen yet: per histogram, the sets' new values (delta) or only
    their new exemplars (cumulative), and when it last collected."""

    __slots__ = ("delta", "last_ns", "sets")

    def __init__(self, delta: bool, now_ns: int) -> None:
        self.delta = delta
        self.last_ns = now_ns
        self.sets: tuple[dict[Key, _Acc], dict[Key, _Acc]] = ({}, {})


class CallHistograms:
    """The two call histograms of one MeterProvider, for all its handlers and readers."""

    def __init__(
        self,
        exemplars: bool = True,
        trace_filter: Callable[[], Callable[[int], bool] | None] = lambda: None,
        queue_cap: int = QUEUE_CAP,
        max_sets: int = MAX_SETS,
    ) -> None:
        self._queue: deque[Queued] = deque()
        self._queue_cap = queue_cap
        self._max_sets = max_sets
        self._exemplars = exemplars
        self._trace_filter = trace_filter
        self._lock = threading.Lock()
        self._totals: tuple[dict[Key, _Acc], dict[Key, _Acc]] = ({}, {})
        self._views: weakref.WeakKeyDictionary[MetricReader, _View] = weakref.WeakKeyDictionary()
        # A new set's start: the previous fold, which is before any value it folds now.
        self._folded_ns = time.time_ns()

    def record(
        self,
        attributes: Mapping[str, Any],
        inference_calls: int,
        tool_calls: int | None,
        link: SpanLink | None = None,
    ) -> None:
        """A run's counts (``tool_calls`` None: not known); ``link``, its span, the exemplar."""
        queue = self._queue
        queue.append((attributes, inference_calls, tool_calls, link))
        if len(queue) > self._queue_cap:
            self.fold()

    def add_reader(self, reader: MetricReader, temporality: AggregationTemporality) -> None:
        """Follow ``reader`` from now on (its first delta holds every value folded from now)."""
        with self._lock:
            if reader not in self._views:
                self._views[reader] = _View(temporality is _DELTA, self._folded_ns)

    def fold(self) -> None:
        """Move what is queued into the sets (every reader's view too)."""
        queue = self._queue
        with self._lock:
            now = time.time_ns()
            views = list(self._views.values())
            # Each attribute set's key, once per fold: by identity, the set held here so that
            # its identity is not reused by a set made while this fold runs.
            keys: dict[int, tuple[Mapping[str, Any], Key]] = {}
            while queue:
                try:
                    attributes, inference, tools, link = queue.popleft()
                except IndexError:  # pragma: no cover - another thread folded the last one
                    break  # pragma: no mutate: the fold time only ever moves later
                known = keys.get(id(attributes))  # pragma: no mutate: a cache, a miss recomputes
                if known is None:
                    pair = (attributes, frozenset(attributes.items()))
                    known = keys[id(attributes)] = pair  # pragma: no mutate: a cache
                key = known[1]
                self._add(0, key, attributes, inference, link, now, views)
                if tools is not None:
                    self._add(1, key, attributes, tools, link, now, views)
            self._folded_ns = now

    def _add(
        self,
        which: int,
        key: Key,
        attributes: Mapping[str, Any],
        value: float,
        link: SpanLink | None,
        now: int,
        views: list[_View],
    ) -> None:
        bucket = bisect_left(BOUNDS, value)
        exemplar = (link[0], link[1], value, now) if link is not None and self._exemplars else None
        totals = self._totals[which]
        acc = totals.get(key)
        if acc is None:
            if len(totals) >= self._max_sets:
                key, attributes = frozenset(_OVERFLOW), dict(_OVERFLOW)
                acc = totals.get(key)
            if acc is None:
                acc = totals[key] = _Acc(attributes, self._folded_ns)
        acc.add(value, bucket)
        for view in views:
            sets = view.sets[which]
            seen = sets.get(key)
            if view.delta:
                if seen is None:
                    seen = sets[key] = _Acc(attributes, view.last_ns)
                seen.add(value, bucket)
            elif exemplar is not None and seen is None:  # cumulative: only its exemplars
                seen = sets[key] = _Acc(attributes, view.last_ns)  # pragma: no mutate: start unused
            if exemplar is not None and seen is not None:
                seen.exemplars[bucket] = exemplar

    def metrics(self, reader: MetricReader, temporality: AggregationTemporality) -> list[Metric]:
        """The two histograms for this collection of ``reader`` (only those with points)."""
        self.fold()
        links = self._trace_filter()
        with self._lock:
            now = time.time_ns()
            view = self._views.get(reader)
            if view is None:  # a reader unknown so far: everything up to now is new to it
                view = self._views[reader] = _View(temporality is _DELTA, now)
                if view.delta:
                    view.sets = (dict(self._totals[0]), dict(self._totals[1]))
            unseen, view.sets = view.sets, ({}, {})
            view.last_ns = now
            out: list[Metric] = []
            rows = zip(SPECS, self._totals, unseen, strict=True)  # pragma: no mutate: 2 each
            for spec, totals, new in rows:
                if view.delta:
                    points = [_point(acc, acc.start_ns, now, acc, links) for acc in new.values()]
                else:
                    points = [
                        _point(acc, acc.start_ns, now, new.get(key), links)
                        for key, acc in totals.items()
                    ]
                if points:
                    out.append(_metric(spec, _DELTA if view.delta else _CUMULATIVE, points))
        return out


def _point(
    acc: _Acc,
    start_ns: int,
    now: int,
    seen: _Acc | None,
    links: Callable[[int], bool] | None,
) -> HistogramDataPoint:
    exemplars = [
        Exemplar({}, value, at, span_id=span, trace_id=trace)
        for trace, span, value, at in (seen.exemplars.values() if seen is not None else ())
        if links is None or links(trace)
    ]
    return HistogramDataPoint(
        attributes=dict(acc.attributes),
        start_time_unix_nano=start_ns,
        time_unix_nano=now,
        count=acc.count,
        sum=acc.sum,
        bucket_counts=tuple(acc.buckets),
        explicit_bounds=BOUNDS,
        min=acc.min,
        max=acc.max,
        exemplars=exemplars,
    )


def _metric(
    spec: semconv.InstrumentSpec,
    temporality: AggregationTemporality,
    points: list[HistogramDataPoint],
) -> Metric:
    return Metric(
        name=spec.name,
        description=spec.description,
        unit=spec.unit,
        data=Histogram(data_points=points, aggregation_temporality=temporality),
    )


def absorb(data: MetricsData | None, ours: list[Metric]) -> tuple[MetricsData | None, list[Metric]]:
    """Handlers built before their MeterProvider was known record these histograms into the
    SDK's instruments: where ``data`` (the SDK's collection) holds one of ``ours`` in this
    package's scope, their points are summed per attribute set into it (one family per name);
    what remains of ``ours`` is returned for the caller to add."""
    left = {metric.name: metric for metric in ours}
    if data is None or not any(
        metric.name in left
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        if scope.scope.name == semconv.SCOPE_NAME
        for metric in scope.metrics
    ):
        return data, ours
    resources = []
    for resource in data.resource_metrics:
        scopes = []
        for scope in resource.scope_metrics:
            metrics = []
            for metric in scope.metrics:
                mine = (
                    left.pop(metric.name, None) if scope.scope.name == semconv.SCOPE_NAME else None
                )
                if mine is not None and isinstance(metric.data, Histogram):
                    points = _summed([*metric.data.data_points, *mine.data.data_points])
                    data_ = Histogram(points, metric.data.aggregation_temporality)
                    metric = Metric(metric.name, metric.description, metric.unit, data_)
                metrics.append(metric)
            scopes.append(ScopeMetrics(scope.scope, metrics, scope.schema_url))
        resources.append(ResourceMetrics(resource.resource, scopes, resource.schema_url))
    return MetricsData(resources), list(left.values())


def _summed(points: list[HistogramDataPoint]) -> list[HistogramDataPoint]:
    by_set: dict[Key, HistogramDataPoint] = {}
    for point in points:
        key = frozenset((point.attributes or {}).items())
        was = by_set.get(key)
        by_set[key] = (
            point
            if was is None
            else HistogramDataPoint(
                attributes=was.attributes,
                start_time_unix_nano=min(was.start_time_unix_nano, point.start_time_unix_nano),
                time_unix_nano=max(was.time_unix_nano, point.time_unix_nano),
                count=was.count + point.count,
                sum=was.sum + point.sum,
                bucket_counts=tuple(map(add, was.bucket_counts, point.bucket_counts)),
                explicit_bounds=was.explicit_bounds,
                min=min(was.min, point.min),
                max=max(was.max, point.max),
                exemplars=[*was.exemplars, *point.exemplars],
            )
        )
    return list(by_set.values())
