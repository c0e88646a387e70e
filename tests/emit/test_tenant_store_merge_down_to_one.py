"""Once two handlers' stores were summed, a set's sum never goes back, even when only one store
is left: an orphaned handler that expires takes its part of a shared set into the set's carry,
so the last store's series is still served with what the other had counted (a counter that fell
back to the remaining store's own total would read as a reset)."""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint

from symfonic_otel import semconv
from symfonic_otel.emit.tenant_counters import TenantCounters
from symfonic_otel.emit.tenant_hub import hub_for
from symfonic_otel.emit.tenants import ActiveTenants
from tests.support.manual_clock import Clock

RUNS = semconv.AGENT_RUNS.name
ACME = {semconv.TENANT_ID: "acme"}


def _acme_runs(reader: InMemoryMetricReader) -> list[float]:
    data = reader.get_metrics_data()
    return [
        point.value
        for rm in (data.resource_metrics if data else ())
        for sm in rm.scope_metrics
        for metric in sm.metrics
        if metric.name == RUNS
        for point in metric.data.data_points
        if isinstance(point, NumberDataPoint) and dict(point.attributes or {}) == ACME
    ]


def test_the_sum_keeps_an_expired_orphan_s_part_when_one_store_is_left(
    sdk: tuple[InMemoryMetricReader, MeterProvider],
) -> None:
    reader, provider = sdk
    clock = Clock(now=0.0)
    live, orphan = (TenantCounters(ActiveTenants(idle_s=10, clock=clock), 10) for _ in range(2))
    hub = hub_for(provider)
    hub.add_store(live)
    hub.add_store(orphan)
    live.add(RUNS, "acme", ACME, 1)
    orphan.add(RUNS, "acme", ACME, 5)
    assert _acme_runs(reader) == [6]
    orphan.orphan()  # its handler was collected at 0 s: reported until 10 s
    clock.now = 5
    live.add(RUNS, "acme", ACME, 1)  # acme stays active in the live handler
    assert _acme_runs(reader) == [7]
    clock.now = 11  # the orphan expired; acme, seen at 5 s, has not
    assert _acme_runs(reader) == [7]
    assert hub.stores == [live]
    live.add(RUNS, "acme", ACME, 2)
    assert _acme_runs(reader) == [9]
