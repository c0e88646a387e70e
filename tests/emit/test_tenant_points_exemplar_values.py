"""A per-tenant counter point's exemplar is the latest count that came with a sampled span: its
value is that count's increment (as an SDK counter's exemplar holds the measurement), not the
series' running total, under either temporality."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.metrics import Counter, MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    NumberDataPoint,
)

from symfonic_otel import semconv
from symfonic_otel.emit.tenant_counters import TenantCounters
from symfonic_otel.emit.tenant_hub import hub_for
from symfonic_otel.emit.tenants import ActiveTenants
from tests.support.recorded import reader_points

TRACE_A, SPAN_A = 0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331
TRACE_B, SPAN_B = 0x5B8EFFF798038103D269B633813FC60C, 0xEEE19B7EC3C1B174
COST = semconv.LLM_COST.name
ATTRS = {semconv.TENANT_ID: "acme"}


@pytest.mark.parametrize("delta", [False, True], ids=["cumulative", "delta"])
def test_the_exemplar_holds_the_latest_count_not_the_total(delta: bool) -> None:
    preferred: dict[type, AggregationTemporality] = (
        {Counter: AggregationTemporality.DELTA} if delta else {}
    )
    reader = InMemoryMetricReader(preferred_temporality=preferred)
    provider = MeterProvider(metric_readers=[reader])
    store = TenantCounters(ActiveTenants(), detail_cap=10)
    hub_for(provider).add_store(store)
    try:
        store.add(COST, "acme", ATTRS, 0.25, link=(TRACE_A, SPAN_A))
        store.add(COST, "acme", ATTRS, 0.5, link=(TRACE_B, SPAN_B))
        store.add(COST, "acme", ATTRS, 0.125)  # no sampled span: the exemplar stays
        [point] = reader_points(reader, COST)
    finally:
        provider.shutdown()
    assert isinstance(point, NumberDataPoint)
    assert point.value == 0.875
    [exemplar] = point.exemplars
    assert (exemplar.trace_id, exemplar.span_id) == (TRACE_B, SPAN_B)
    assert exemplar.value == 0.5
