"""The demo's figures, read from one ``MetricsData``: sums and merged histograms by attributes.

Shared by the summary tables (``report``) and the notes that explain them (``notes``).
Percentiles are interpolated from histogram buckets the way Prometheus' ``histogram_quantile``
does, so the demo's numbers match what a dashboard shows.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.metrics.export import HistogramDataPoint, MetricsData, NumberDataPoint

__all__ = ["MetricView", "histogram_quantile"]


@dataclass
class _Histogram:
    bounds: tuple[float, ...] = ()
    counts: list[int] = field(default_factory=list)
    count: int = 0
    total: float = 0.0

    def merge(self, point: HistogramDataPoint) -> None:
        if not self.counts:
            self.bounds = tuple(point.explicit_bounds)
            self.counts = [0] * len(point.bucket_counts)
        for index, value in enumerate(point.bucket_counts):
            self.counts[index] += value
        self.count += point.count
        self.total += point.sum


def histogram_quantile(q: float, bounds: Sequence[float], counts: Sequence[int]) -> float:
    """Prometheus' estimate: linear interpolation inside the bucket holding the q-th rank."""
    total = sum(counts)
    if total == 0:
        return math.nan
    rank = q * total
    cumulative = 0
    for index, count in enumerate(counts):
        if cumulative + count >= rank and count > 0:
            if index >= len(bounds):  # the +Inf bucket: the highest finite bound
                return bounds[-1] if bounds else math.nan
            lower = bounds[index - 1] if index > 0 else 0.0
            return lower + (bounds[index] - lower) * (rank - cumulative) / count
        cumulative += count
    return bounds[-1] if bounds else math.nan


class MetricView:
    """Sums and merged histograms over one ``MetricsData``, grouped by attribute keys."""

    def __init__(self, data: MetricsData | None) -> None:
        self._points: dict[str, list[Any]] = defaultdict(list)
        if data is None:
            return
        for resource_metrics in data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    self._points[metric.name].extend(metric.data.data_points)

    def sums(self, name: str, by: Sequence[str]) -> dict[tuple[Any, ...], float]:
        result: dict[tuple[Any, ...], float] = defaultdict(float)
        for point in self._points.get(name, ()):
            if isinstance(point, NumberDataPoint):
                attrs = point.attributes or {}
                result[tuple(attrs.get(key) for key in by)] += point.value
        return dict(result)

    def total(self, name: str, where: Mapping[str, Any] | None = None) -> float:
        total = 0.0
        for point in self._points.get(name, ()):
            attrs = point.attributes or {}
            if where and any(attrs.get(k) != v for k, v in where.items()):
                continue
            if isinstance(point, NumberDataPoint):
                total += point.value
            elif isinstance(point, HistogramDataPoint):
                total += point.count
        return total

    def histograms(self, name: str, by: Sequence[str]) -> dict[tuple[Any, ...], _Histogram]:
        result: dict[tuple[Any, ...], _Histogram] = defaultdict(_Histogram)
        for point in self._points.get(name, ()):
            if isinstance(point, HistogramDataPoint):
                attrs = point.attributes or {}
                result[tuple(attrs.get(key) for key in by)].merge(point)
        return dict(result)
