"""The per-tenant counters as OTel metric points, for one reader's collection.

Cumulative points carry each series' own start time: a tenant that returns after giving its slot
back starts a new series, which readers see as a reset. Under the delta preference each reader
gets true deltas since its previous collection, and a series whose total did not change is not
sent; what a reader last saw is kept per reader for live series only, so it shrinks as tenants
leave. The latest sampled span behind a series (a tenant's latest bail) rides on its point as an
exemplar.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterable
from typing import Protocol

from opentelemetry.sdk.metrics import Exemplar
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Metric,
    MetricReader,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from symfonic_otel import semconv
from symfonic_otel._version import __version__
from symfonic_otel.emit.tenant_counters import Series, SeriesKey
from symfonic_otel.semconv import InstrumentSpec

SCOPE = InstrumentationScope(semconv.SCOPE_NAME, __version__)
_DELTA = AggregationTemporality.DELTA
_CUMULATIVE = AggregationTemporality.CUMULATIVE


class SeriesSource(Protocol):
    """What the points are built from: every per-tenant counter and its live series."""

    def families(self) -> Iterable[tuple[InstrumentSpec, list[Series]]]: ...


class _DeltaState:
    """What one delta reader last exported: per series key, (series start, total), and when."""

    __slots__ = ("last", "last_ns", "lock")

    def __init__(self, now_ns: int) -> None:
        self.last: dict[str, dict[SeriesKey, tuple[int, float]]] = {}
        self.last_ns = now_ns
        # A flush and the periodic export may collect one reader at once: one delta at a time,
        # or both would send the same increments.
        self.lock = threading.Lock()


class TenantPoints:
    """Builds the per-tenant counters' OTel metrics for each collection of each reader."""

    def __init__(self, hub: SeriesSource, resource: Resource) -> None:
        self._hub = hub
        self._resource = resource
        self._lock = threading.Lock()
        self._delta: weakref.WeakKeyDictionary[MetricReader, _DeltaState] = (
            weakref.WeakKeyDictionary()
        )

    def produce(
        self,
        reader: MetricReader,
        temporality: AggregationTemporality,
        data: MetricsData | None,
        also: list[Metric] | None = None,
    ) -> MetricsData | None:
        """``data`` (the SDK's collection) with the per-tenant counters in this package's scope
        (and ``also``, other metrics of this package produced for this collection)."""
        now = time.time_ns()
        if temporality is _DELTA:
            with self._lock:
                state = self._delta.get(reader)
                if state is None:
                    state = self._delta[reader] = _DeltaState(now)
            with state.lock:
                ours = self._deltas(state, time.time_ns())
        else:
            links = getattr(self._hub, "trace_filter", None)
            ours = [
                _metric(
                    spec, _CUMULATIVE, [_point(s, s.total, s.start_ns, now, links) for s in series]
                )
                for spec, series in self._hub.families()
            ]
        return merge(data, [m for m in ours if m.data.data_points] + (also or []), self._resource)

    def _deltas(self, state: _DeltaState, now: int) -> list[Metric]:
        metrics: list[Metric] = []
        since = state.last_ns
        links = getattr(self._hub, "trace_filter", None)
        for spec, series in self._hub.families():
            before = state.last.get(spec.name, {})
            seen: dict[SeriesKey, tuple[int, float]] = {}
            points: list[NumberDataPoint] = []
            for s in series:
                total = s.total
                start, last = before.get(s.key, (s.start_ns, 0))
                if start != s.start_ns:  # the tenant left and came back: a new series
                    last = 0
                seen[s.key] = (s.start_ns, total)
                if total != last:
                    points.append(_point(s, total - last, max(since, s.start_ns), now, links))
            state.last[spec.name] = seen
            metrics.append(_metric(spec, _DELTA, points))
        state.last_ns = now
        return metrics


def _point(
    series: Series, value: float, start_ns: int, now: int, links: Callable[[int], bool] | None
) -> NumberDataPoint:
    exemplar = series.exemplar
    exemplars = (
        [Exemplar({}, exemplar[2], exemplar[3], span_id=exemplar[1], trace_id=exemplar[0])]
        if exemplar is not None and (links is None or links(exemplar[0]))
        else []
    )
    return NumberDataPoint(dict(series.attributes), start_ns, now, value, exemplars)


def _metric(
    spec: InstrumentSpec, temporality: AggregationTemporality, points: list[NumberDataPoint]
) -> Metric:
    return Metric(
        name=spec.name,
        description=spec.description,
        unit=spec.unit,
        data=Sum(data_points=points, aggregation_temporality=temporality, is_monotonic=True),
    )


def merge(data: MetricsData | None, ours: list[Metric], resource: Resource) -> MetricsData | None:
    """``data`` with ``ours`` added to this package's scope (created when the SDK had none)."""
    if not ours:
        return data
    if data is None or not data.resource_metrics:
        return MetricsData([ResourceMetrics(resource, [ScopeMetrics(SCOPE, ours, "")], "")])
    first, *rest = data.resource_metrics
    scopes = list(first.scope_metrics)
    for index, scope_metrics in enumerate(scopes):
        scope = scope_metrics.scope
        if scope.name == SCOPE.name and scope.version == SCOPE.version:
            scopes[index] = ScopeMetrics(
                scope, [*scope_metrics.metrics, *ours], scope_metrics.schema_url
            )
            break
    else:
        scopes.append(ScopeMetrics(SCOPE, ours, ""))
    return MetricsData([ResourceMetrics(first.resource, scopes, first.schema_url), *rest])
