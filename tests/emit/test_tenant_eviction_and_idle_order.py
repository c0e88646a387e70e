"""Tenant slots and per-tenant totals at the edges their other tests leave alone.

Every listener hears of an evicted tenant even when one fails; activity keeps a tenant's place
in the idle order (so an idle tenant behind it is still freed); every handler on a provider
forgets its idle tenants at a collection, not only the first; a garbage-collected handler's
totals are still exported exactly ``tenant_idle_s`` after, and gone one tick past; with
``tenant_histograms=True`` the series budget grows with the tenants. Real SDK readers; time is a
test clock.
"""

from __future__ import annotations

import gc

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from symfonic_otel import OTelCallbackHandler, semconv, tenant_scope
from symfonic_otel.emit.budget import series_budget
from symfonic_otel.emit.tenants import ActiveTenants
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from tests.support.clocked_sdk import ClockedSdk
from tests.support.manual_clock import Clock

IDLE = 600.0


def _points(reader: InMemoryMetricReader, name: str) -> list[tuple[dict[str, object], float]]:
    data = reader.get_metrics_data()
    return [
        (dict(p.attributes or {}), getattr(p, "value", getattr(p, "count", 0)))
        for rm in (data.resource_metrics if data else ())
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == name
        for p in m.data.data_points
    ]


def _run_tenants(reader: InMemoryMetricReader) -> set[object]:
    return {a.get(semconv.TENANT_ID) for a, v in _points(reader, semconv.AGENT_RUNS.name) if v}


def _run(
    handler: OTelCallbackHandler, tenant: str, run_id: str, outcome: str = "completed"
) -> None:
    with tenant_scope(tenant):
        handler.agent_start(AgentStartEvent("q", run_id))
        handler.agent_end(AgentEndEvent(run_id, "answer", 10.0, 1, outcome=outcome))  # type: ignore[arg-type]


def test_every_listener_hears_of_an_eviction_when_one_fails() -> None:
    clock = Clock()
    tenants = ActiveTenants(max_tenants=10, idle_s=IDLE, clock=clock)
    heard: list[str] = []

    def failing(tenant: str) -> None:
        raise RuntimeError("a broken listener")

    tenants.on_evict(failing)
    tenants.on_evict(heard.append)
    tenants("a")
    tenants("b")
    clock.now += IDLE + 1
    assert tenants.expire() == ["a", "b"]
    assert heard == ["a", "b"]
    assert len(tenants) == 0


def test_activity_moves_a_tenant_behind_the_idle_ones(clocked: ClockedSdk) -> None:
    """'a' starts first but keeps working in a long run; 'b' goes idle: 'b' gives its slot."""
    handler = clocked.handler(max_tenants=2, tenant_idle_s=IDLE)
    with tenant_scope("a"):
        handler.agent_start(AgentStartEvent("q", "long"))
    clocked.clock.now += 1
    _run(handler, "b", "rb")
    clocked.clock.now += IDLE - 100  # 'b' idle for IDLE - 100: still holds its slot
    with tenant_scope("a"):  # the long run's model call counts tokens for 'a'
        handler.llm_end(
            LLMEndEvent(model="m", output="x", usage={"input_tokens": 1}, run_id="long")
        )
    clocked.clock.now += 101  # 'b' one second past IDLE, 'a' active 101 s ago
    _run(handler, "c", "rc")
    with tenant_scope("a"):
        handler.agent_end(AgentEndEvent("long", "answer", 10.0, 1))
    assert _run_tenants(clocked.reader) == {"a", "c"}


def test_every_handler_on_a_provider_forgets_its_idle_tenants(clocked: ClockedSdk) -> None:
    handlers = [
        clocked.handler(agent_name=name, tenant_idle_s=IDLE)
        for name in ("first", "second", "third")
    ]
    for index, handler in enumerate(handlers):
        _run(handler, f"t{index}", f"r{index}")
    assert _run_tenants(clocked.reader) == {"t0", "t1", "t2"}
    clocked.clock.now += IDLE  # exactly idle: kept
    assert _run_tenants(clocked.reader) == {"t0", "t1", "t2"}
    clocked.clock.now += 0.001
    assert _run_tenants(clocked.reader) == set()


@pytest.mark.parametrize(("after_s", "exported"), [(IDLE, 1), (IDLE + 0.001, 0)])
def test_a_collected_handler_s_totals_last_exactly_one_idle_time(
    clocked: ClockedSdk, after_s: float, exported: int
) -> None:
    handler = clocked.handler(tenant_idle_s=IDLE)
    _run(handler, "acme", "r")
    del handler
    gc.collect()
    clocked.clock.now += after_s
    assert sum(v for _, v in _points(clocked.reader, semconv.AGENT_RUNS.name)) == exported


def test_with_tenant_histograms_the_budget_bounds_each_tenant_s_sets(
    sdk: tuple[InMemoryMetricReader, MeterProvider],
) -> None:
    """Three tenants, each with a completed and a failed run: six duration series."""
    reader, provider = sdk
    handler = OTelCallbackHandler(meter_provider=provider, max_tenants=3, tenant_histograms=True)
    for index in range(3):
        _run(handler, f"t{index}", f"ok{index}")
        _run(handler, f"t{index}", f"err{index}", outcome="error")
    name = semconv.AGENT_DURATION.name
    served = _points(reader, name)
    assert len(served) == 6
    assert len(served) <= series_budget(3, tenant_histograms=True)[name]
    assert series_budget(3, tenant_histograms=False)[name] < len(served)
