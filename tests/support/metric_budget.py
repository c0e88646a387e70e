"""Reading a metrics collection against a series budget: no point is the SDK's overflow series
and no metric has more points than its budget allows."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from opentelemetry.sdk.metrics.export import MetricsData


def metrics_within_budget(
    data: MetricsData | None, budget: Mapping[str, int]
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Each metric's name and its points' attributes, each metric checked first (iterate to the
    end: a check runs as its metric is reached)."""
    assert data is not None
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points = list(metric.data.data_points)
                attributes = [dict(p.attributes or {}) for p in points]
                assert not any("otel.metric.overflow" in a for a in attributes), metric.name
                if metric.name in budget:
                    assert len(points) <= budget[metric.name], metric.name
                yield metric.name, attributes
