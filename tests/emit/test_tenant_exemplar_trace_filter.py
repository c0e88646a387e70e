"""A per-tenant counter's exemplar names only a trace that is exported.

The hub's ``trace_filter`` (``export.trace_exemplars``: the tracer provider's exporters and
outcome retention) answers per trace id; a series whose latest span is in a trace the filter
refuses is still reported, without its exemplar. Cumulative readers and delta readers alike,
and the Prometheus endpoint's OpenMetrics exposition.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from opentelemetry.sdk.metrics import Counter, MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    MetricsData,
)
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from symfonic_otel import semconv
from symfonic_otel.emit import reader_hook
from symfonic_otel.emit.tenant_counters import TENANT_COUNTERS, Series, TenantCounters
from symfonic_otel.emit.tenant_hub import hub_for
from symfonic_otel.emit.tenants import ActiveTenants
from symfonic_otel.export.tenant_exposition import TenantExposition
from symfonic_otel.semconv import InstrumentSpec

EXPORTED_TRACE, DROPPED_TRACE = (
    0x0AF7651916CD43DD8448EB211C803190,
    0x0AF7651916CD43DD8448EB211C803191,
)


def _exported(trace_id: int) -> bool:
    return trace_id % 2 == 0  # as outcome retention would answer: this one kept, that one not


def _linked(data: MetricsData | None) -> dict[str, list[int | None]]:
    """The trace ids of each tenant's bail exemplars (every point reported with its count)."""
    assert data is not None
    linked: dict[str, list[int | None]] = {}
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name == semconv.SILENT_BAILS.name:
                    for point in metric.data.data_points:
                        assert point.value == 1
                        tenant = str(dict(point.attributes or {})[semconv.TENANT_ID])
                        linked[tenant] = [e.trace_id for e in point.exemplars]
    return linked


def _one_bail_each(
    store: TenantCounters, reader: InMemoryMetricReader, provider: MeterProvider
) -> MetricsData:
    """A bail for acme in the exported trace and one for globex in the dropped trace, collected."""
    try:
        for tenant, trace_id in (("acme", EXPORTED_TRACE), ("globex", DROPPED_TRACE)):
            attributes = {semconv.TENANT_ID: tenant}
            store.add(semconv.SILENT_BAILS.name, tenant, attributes, 1, link=(trace_id, 7))
        data = reader.get_metrics_data()
    finally:
        provider.shutdown()
    assert data is not None
    return data


@pytest.mark.parametrize("delta", [False, True], ids=["cumulative", "delta"])
def test_a_tenant_exemplar_names_only_a_trace_the_filter_says_is_exported(delta: bool) -> None:
    temporality = {Counter: AggregationTemporality.DELTA} if delta else {}
    reader = InMemoryMetricReader(preferred_temporality=temporality)
    provider = MeterProvider(metric_readers=[reader])
    store = TenantCounters(ActiveTenants(), detail_cap=4)
    hub = hub_for(provider)
    hub.add_store(store)
    hub.trace_filter = _exported
    data = _one_bail_each(store, reader, provider)
    assert _linked(data) == {"acme": [EXPORTED_TRACE], "globex": []}


class _Unfiltered:
    """A series source with no trace filter (``reader_hook`` takes any ``SeriesSource``)."""

    def __init__(self, store: TenantCounters) -> None:
        self.store = store

    def families(self) -> Iterable[tuple[InstrumentSpec, list[Series]]]:
        for spec in TENANT_COUNTERS:
            yield spec, list(self.store.series[spec.name].values())


@pytest.mark.parametrize("delta", [False, True], ids=["cumulative", "delta"])
def test_a_source_without_a_trace_filter_keeps_every_exemplar(delta: bool) -> None:
    temporality = {Counter: AggregationTemporality.DELTA} if delta else {}
    reader = InMemoryMetricReader(preferred_temporality=temporality)
    provider = MeterProvider(metric_readers=[reader])
    store = TenantCounters(ActiveTenants(), detail_cap=4)
    assert reader_hook.install(provider, _Unfiltered(store))
    data = _one_bail_each(store, reader, provider)
    assert _linked(data) == {"acme": [EXPORTED_TRACE], "globex": [DROPPED_TRACE]}


def test_the_openmetrics_exposition_shows_only_exemplars_of_exported_traces() -> None:
    provider = MeterProvider()
    store = TenantCounters(ActiveTenants(), detail_cap=4)
    hub = hub_for(provider)
    hub.add_store(store)
    hub.trace_filter = _exported
    try:
        for tenant, trace_id in (("acme", EXPORTED_TRACE), ("globex", DROPPED_TRACE)):
            attributes = {semconv.TENANT_ID: tenant}
            store.add(semconv.SILENT_BAILS.name, tenant, attributes, 1, link=(trace_id, 7))
        text = "".join(TenantExposition(hub).chunks(True)) + "# EOF\n"
    finally:
        provider.shutdown()
    linked = {
        sample.labels["tenant_id"]: (sample.value, sample.exemplar and sample.exemplar.labels)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    assert linked == {
        "acme": (1, {"span_id": f"{7:016x}", "trace_id": f"{EXPORTED_TRACE:032x}"}),
        "globex": (1, None),  # still reported, without the exemplar
    }
