"""Exemplars on the Prometheus endpoint: each histogram bucket links to the trace behind it.

The SDK keeps exemplars on histogram points (the default trace-based filter samples values
recorded with a sampled span as their context; one per bucket), and OpenMetrics can carry them,
but the OTel Prometheus exporter drops them when it builds its families. ``ExemplarReader`` is
that exporter's reader, holding the latest collection for the scrape that serves it, and
``with_exemplars`` puts each point's exemplars back on its bucket samples (the served registry in
``symfonic_otel.export.prometheus`` calls it at every scrape).
prometheus_client's HTTP server then sends them to a scraper that asks for OpenMetrics
(``Accept: application/openmetrics-text``, as Prometheus does with exemplar storage on); the
classic text format has no exemplars and is unchanged.

Points are matched to samples by family name and labels, translated the way the exporter does
(its name and label sanitising functions); a family the match does not find is served as is.
"""

from __future__ import annotations

import json
import threading
from bisect import bisect_left
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


def _label_value(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _family_name(name: str, unit: str) -> str:
    """The name prometheus_client gives the exporter's family (the unit appended once)."""
    base = sanitize_full_name(name)
    mapped = map_unit(unit or "")
    return f"{base}_{mapped}" if mapped and not base.endswith(f"_{mapped}") else base


def _scope_labels(scope: Any) -> dict[str, str]:
    labels = {
        "otel_scope_name": scope.name or "",  # pragma: no mutate: a nameless meter records nothing
        "otel_scope_version": scope.version or "",
        "otel_scope_schema_url": scope.schema_url or "",
    }
    for key, value in (scope.attributes or {}).items():
        labels[sanitize_attribute(f"otel_scope_{key}")] = _label_value(value)
    return labels


class ExemplarReader(PrometheusMetricReader):
    """The exporter's reader; also holds the latest collection until a scrape takes it.

    Nothing is indexed here: the exemplar index is built at scrape time from the collection the
    scrape serves and dropped with it, so no per-series state outlives a scrape.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(registry=registry)
        self._latest_lock = threading.Lock()
        self._latest: MetricsData | None = None

    def _receive_metrics(
        self,
        metrics_data: MetricsData,
        timeout_millis: float = 10_000,  # pragma: no mutate: the exporter's reader ignores it
        **kwargs: Any,
    ) -> None:
        if metrics_data is not None:
            with self._latest_lock:
                self._latest = metrics_data
        # Passed on as given; the exporter's reader ignores the timeout and the keywords.
        super()._receive_metrics(metrics_data, timeout_millis, **kwargs)  # pragma: no mutate

    def take_latest(self) -> MetricsData | None:
        """The latest collection, handed over once (the scrape that serves it)."""
        with self._latest_lock:
            latest, self._latest = self._latest, None
        return latest


ExemplarIndex = dict[str, dict[frozenset[tuple[str, str]], dict[int, Exemplar]]]


def exemplar_index(metrics_data: MetricsData | None) -> ExemplarIndex:
    """Family name -> series labels -> exemplar by bucket index, for points that have any."""
    found: ExemplarIndex = {}
    if sanitize_full_name is None:  # pragma: no cover - an exporter without the mapping
        return found
    if metrics_data is None:
        return found
    try:
        for resource_metrics in metrics_data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                scope = _scope_labels(scope_metrics.scope)
                for metric in scope_metrics.metrics:
                    if isinstance(metric.data, Histogram):
                        _index_metric(metric, scope, found)
    except Exception:  # exemplars are a bonus: the scrape itself must never fail
        return {}
    return found


def _index_metric(metric: Any, scope: Mapping[str, str], found: ExemplarIndex) -> None:
    series: dict[frozenset[tuple[str, str]], dict[int, Exemplar]] | None = None
    for point in metric.data.data_points:
        buckets = _buckets(point)
        if not buckets:
            continue
        labels = dict(scope)
        for key, value in (point.attributes or {}).items():
            labels[sanitize_attribute(key)] = _label_value(value)
        if series is None:
            series = found.setdefault(_family_name(metric.name, metric.unit or ""), {})
        series[_key(labels)] = buckets


def _key(labels: Mapping[str, str]) -> frozenset[tuple[str, str]]:
    return frozenset((k, v) for k, v in labels.items() if k != "le" and v != "")


def _buckets(point: Any) -> dict[int, Exemplar]:
    """Exemplars of a point by bucket index (the bucket their value falls in)."""
    if not point.exemplars:
        return {}
    bounds = point.explicit_bounds
    found: dict[int, Exemplar] = {}
    for exemplar in point.exemplars:
        # The SDK sets both ids from one span context, or neither.
        if not exemplar.trace_id or not exemplar.span_id:  # pragma: no mutate: both or neither
            continue
        found[bisect_left(bounds, exemplar.value)] = Exemplar(
            {"trace_id": f"{exemplar.trace_id:032x}", "span_id": f"{exemplar.span_id:016x}"},
            exemplar.value,
            exemplar.time_unix_nano / 1e9,
        )
    return found


def with_exemplars(families: Iterable[PrometheusMetric], index: ExemplarIndex) -> None:
    """Put the exemplars of ``index`` on the bucket samples of ``families``, in place.

    A family without exemplars is left as it is (no copy). Within a family the exporter writes
    each series' buckets in order, ending with ``+Inf``: the series key is computed once per
    series, not once per bucket line.
    """
    for family in families:
        # Only a histogram has samples named ``_bucket``: the type check saves a lookup.
        series = index.get(family.name) if family.type == "histogram" else None  # pragma: no mutate
        if series:
            family.samples = list(_placed(family.name, family.samples, series))


def _placed(
    name: str,
    samples: list[Sample],
    series: Mapping[frozenset[tuple[str, str]], dict[int, Exemplar]],
) -> Iterator[Sample]:
    bucket_name = f"{name}_bucket"
    position = 0
    exemplars: Mapping[int, Exemplar] = {}  # pragma: no mutate: a first bucket sets it
    for sample in samples:
        if sample.name != bucket_name:
            yield sample
            continue
        if position == 0:  # a series' first bucket: look its exemplars up once
            exemplars = series.get(_key(sample.labels)) or {}
        exemplar = exemplars.get(position)
        if exemplar is not None:
            sample = sample._replace(exemplar=exemplar)
        yield sample
        position = 0 if sample.labels.get("le") == "+Inf" else position + 1
