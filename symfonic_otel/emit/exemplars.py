"""Exemplars on the Prometheus endpoint: each histogram bucket links to the trace behind it.

The SDK keeps exemplars on histogram points (the default trace-based filter samples values
recorded with a sampled span as their context; one per bucket), and OpenMetrics can carry them,
but the OTel Prometheus exporter drops them when it builds its families. ``ExemplarReader`` is
that exporter's reader, remembering the exemplars of each collection, and ``ExemplarCollector``
serves the reader's families with the exemplars put back on their bucket samples.
prometheus_client's HTTP server then sends them to a scraper that asks for OpenMetrics
(``Accept: application/openmetrics-text``, as Prometheus does with exemplar storage on); the
classic text format has no exemplars and is unchanged.

Points are matched to samples by family name and labels, translated the way the exporter does
(its name and label sanitising functions); a family the match does not find is served as is.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics.export import Histogram, MetricsData
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric as PrometheusMetric
from prometheus_client.samples import Exemplar, Sample

try:  # the exporter's own translation, so the keys agree with its families
    from opentelemetry.exporter.prometheus._mapping import (
        map_unit,
        sanitize_attribute,
        sanitize_full_name,
    )
except ImportError:  # pragma: no cover - an exporter without them serves no exemplars
    map_unit = sanitize_attribute = sanitize_full_name = None  # type: ignore[assignment]

SeriesKey = tuple[str, frozenset[tuple[str, str]]]  # family name, labels without "le" / blanks


def _label_value(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _family_name(name: str, unit: str) -> str:
    """The name prometheus_client gives the exporter's family (the unit appended once)."""
    base = sanitize_full_name(name)
    mapped = map_unit(unit or "")
    return f"{base}_{mapped}" if mapped and not base.endswith(f"_{mapped}") else base


def _scope_labels(scope: Any) -> dict[str, str]:
    labels = {
        "otel_scope_name": scope.name or "",
        "otel_scope_version": scope.version or "",
        "otel_scope_schema_url": scope.schema_url or "",
    }
    for key, value in (scope.attributes or {}).items():
        labels[sanitize_attribute(f"otel_scope_{key}")] = _label_value(value)
    return labels


def _key(name: str, labels: Mapping[str, str]) -> SeriesKey:
    return name, frozenset((k, v) for k, v in labels.items() if k != "le" and v != "")


class ExemplarReader(PrometheusMetricReader):
    """The exporter's reader; also keeps each histogram point's exemplars, by bucket index."""

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(registry=registry)
        self._lock = threading.Lock()
        self._exemplars: dict[SeriesKey, dict[int, Exemplar]] = {}

    def _receive_metrics(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> None:
        found: dict[SeriesKey, dict[int, Exemplar]] = {}
        if metrics_data is not None and sanitize_full_name is not None:
            try:
                self._index(metrics_data, found)
            except Exception:  # exemplars are a bonus: the scrape itself must never fail
                found = {}
        with self._lock:
            self._exemplars = found
        super()._receive_metrics(metrics_data, timeout_millis, **kwargs)

    @staticmethod
    def _index(metrics_data: MetricsData, found: dict[SeriesKey, dict[int, Exemplar]]) -> None:
        for resource_metrics in metrics_data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                scope = _scope_labels(scope_metrics.scope)
                for metric in scope_metrics.metrics:
                    if not isinstance(metric.data, Histogram):
                        continue
                    name = _family_name(metric.name, metric.unit or "")
                    for point in metric.data.data_points:
                        buckets = _buckets(point)
                        if not buckets:
                            continue
                        labels = dict(scope)
                        for key, value in (point.attributes or {}).items():
                            labels[sanitize_attribute(key)] = _label_value(value)
                        found[_key(name, labels)] = buckets

    def exemplars(self, key: SeriesKey) -> dict[int, Exemplar] | None:
        with self._lock:
            return self._exemplars.get(key)


def _buckets(point: Any) -> dict[int, Exemplar]:
    """Exemplars of a point by bucket index (the bucket their value falls in)."""
    from bisect import bisect_left

    bounds = list(point.explicit_bounds)
    found: dict[int, Exemplar] = {}
    for exemplar in point.exemplars or ():
        if not exemplar.trace_id or not exemplar.span_id:
            continue
        found[bisect_left(bounds, exemplar.value)] = Exemplar(
            {"trace_id": f"{exemplar.trace_id:032x}", "span_id": f"{exemplar.span_id:016x}"},
            exemplar.value,
            exemplar.time_unix_nano / 1e9,
        )
    return found


class ExemplarCollector:
    """Serves the families of ``inner`` (the reader's registry) with their exemplars."""

    def __init__(self, inner: CollectorRegistry, reader: ExemplarReader) -> None:
        self._inner = inner
        self._reader = reader

    def describe(self) -> Iterable[PrometheusMetric]:
        return ()  # no collection just to learn the names at registration

    def collect(self) -> Iterator[PrometheusMetric]:
        for family in self._inner.collect():  # collecting runs the reader first
            if family.type == "histogram":
                family.samples = list(self._with_exemplars(family.name, family.samples))
            yield family

    def _with_exemplars(self, name: str, samples: list[Sample]) -> Iterator[Sample]:
        index: dict[SeriesKey, int] = {}
        bucket_name = f"{name}_bucket"
        for sample in samples:
            if sample.name != bucket_name:
                yield sample
                continue
            key = _key(name, sample.labels)
            position = index.get(key, 0)
            index[key] = position + 1
            exemplars = self._reader.exemplars(key)
            exemplar = exemplars.get(position) if exemplars else None
            yield sample if exemplar is None else sample._replace(exemplar=exemplar)
