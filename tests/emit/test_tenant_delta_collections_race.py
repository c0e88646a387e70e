"""Two collections of one delta reader at once (a flush and the periodic export) send each
increment once: a reader's delta is taken against what it last sent under that reader's lock,
so the second collection waits and finds nothing new.

The interleaving is forced (``tests/support/paused_section.py``): the first collection is paused
after it computed its points and before it stores what it sent; the second runs then.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics import Counter, MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    MetricsData,
)
from opentelemetry.sdk.resources import Resource

from symfonic_otel import semconv
from symfonic_otel.emit.tenant_counters import TenantCounters
from symfonic_otel.emit.tenant_hub import TenantHub
from symfonic_otel.emit.tenant_points import TenantPoints
from symfonic_otel.emit.tenants import ActiveTenants
from tests.support.paused_section import PausedBefore

DELTA = AggregationTemporality.DELTA


def _runs(data: MetricsData | None) -> float:
    if data is None:
        return 0.0
    values: list[float] = [
        point.value  # type: ignore[union-attr]
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == semconv.AGENT_RUNS.name
        for point in metric.data.data_points
    ]
    return sum(values)


@pytest.fixture
def served() -> Iterator[tuple[InMemoryMetricReader, TenantCounters, TenantPoints]]:
    """A delta reader, one tenant store holding two runs of ``acme``, and its points."""
    reader = InMemoryMetricReader(preferred_temporality={Counter: DELTA})
    provider = MeterProvider(metric_readers=[reader])
    hub = TenantHub()
    store = TenantCounters(ActiveTenants(), detail_cap=10)
    hub.add_store(store)
    store.add(semconv.AGENT_RUNS.name, "acme", {semconv.TENANT_ID: "acme"}, 2)
    yield reader, store, TenantPoints(hub, Resource.create({"service.name": "checkout"}))
    provider.shutdown()


def test_a_flush_during_the_periodic_collection_does_not_send_its_increments_again(
    served: tuple[InMemoryMetricReader, TenantCounters, TenantPoints],
) -> None:
    reader, store, points = served
    with PausedBefore(TenantPoints._deltas, "state.last[spec.name] = seen") as periodic:
        periodic.start(points.produce, reader, DELTA, None)
        flushed = points.produce(reader, DELTA, None)
        exported = periodic.finish()
    assert _runs(exported) + _runs(flushed) == 2
    store.add(semconv.AGENT_RUNS.name, "acme", {semconv.TENANT_ID: "acme"}, 1)
    assert _runs(points.produce(reader, DELTA, None)) == 1


def test_the_first_two_collections_of_a_new_delta_reader_share_one_record_of_what_was_sent(
    served: tuple[InMemoryMetricReader, TenantCounters, TenantPoints],
) -> None:
    reader, _, points = served
    with PausedBefore(TenantPoints.produce, "_DeltaState(now)") as periodic:
        periodic.start(points.produce, reader, DELTA, None)
        flushed = points.produce(reader, DELTA, None)
        exported = periodic.finish()
    assert _runs(exported) + _runs(flushed) == 2
