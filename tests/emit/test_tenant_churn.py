"""Tenants come and go: slots are bounded by tenants active at once, idle tenants are forgotten.

Real SDK readers throughout (the in-memory reader collects exactly what a cumulative OTLP
exporter sends; the Prometheus reader serves the text a scrape gets); time is a test clock.
"""

from __future__ import annotations

import gc
import tracemalloc
import urllib.request
from typing import Final

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricReader, MetricsData

from symfonic_otel import OTelCallbackHandler, semconv, tenant_scope
from symfonic_otel.emit.budget import cardinality_view, per_tenant_sets
from symfonic_otel.emit.tenant_counters import TENANT_COUNTER_NAMES
from symfonic_otel.emit.tenants import DEFAULT_TENANT_IDLE_S, ActiveTenants
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent, ReactLoopEndEvent
from symfonic_otel.export.setup import configure_telemetry
from tests.support.clocked_sdk import ClockedSdk
from tests.support.configured_handler import handler_on
from tests.support.manual_clock import Clock


def _run(handler: OTelCallbackHandler, tenant: str, run_id: str, bail: bool = False) -> None:
    """The demo's shape: 2 model calls on 2 models, a tool, sometimes a silent bail."""
    with tenant_scope(tenant):
        handler.agent_start(AgentStartEvent("q", run_id))
        for model in ("gpt-4o", "gpt-4o-mini"):
            handler.llm_end(
                LLMEndEvent(
                    model=model,
                    output="x",
                    usage={"input_tokens": 10, "output_tokens": 2},
                    run_id=run_id,
                    node_name="react",
                )
            )
        handler.end_tool(handler.start_tool(run_id, "search"))
        if bail:
            handler.react_loop_end(
                ReactLoopEndEvent(run_id, 3, "list", True, 2, "tool_calls_with_no_text")
            )
        handler.agent_end(AgentEndEvent(run_id, "" if bail else "answer", 10.0, 2))


def _tenant_points(reader: InMemoryMetricReader) -> dict[str, set[object]]:
    """Tenants per per-tenant counter in one collection."""
    data = reader.get_metrics_data()
    found: dict[str, set[object]] = {name: set() for name in TENANT_COUNTER_NAMES}
    if data is None:
        return found
    for resource_metrics in data.resource_metrics:
        for scope in resource_metrics.scope_metrics:
            for metric in scope.metrics:
                if metric.name in found:
                    found[metric.name].update(
                        (p.attributes or {}).get(semconv.TENANT_ID) for p in metric.data.data_points
                    )
    return found


def _count_points(reader: InMemoryMetricReader) -> int:
    data = reader.get_metrics_data()
    if data is None:
        return 0
    return sum(
        len(metric.data.data_points)
        for resource_metrics in data.resource_metrics
        for scope in resource_metrics.scope_metrics
        for metric in scope.metrics
        if metric.name in TENANT_COUNTER_NAMES
    )


def test_the_default_idle_time_outlasts_the_longest_rule_window() -> None:
    three_days = 3 * 86_400.0  # the slow-burn alert's window, the longest any shipped rule reads
    assert three_days < DEFAULT_TENANT_IDLE_S <= three_days + 12 * 3_600
    assert ActiveTenants().max_tenants == 10_000


def test_exactly_max_tenants_are_admitted_and_one_more_overflows(clocked: ClockedSdk) -> None:
    handler = clocked.handler(max_tenants=3)
    for index in range(4):
        _run(handler, f"t{index}", f"r{index}")
    tenants = _tenant_points(clocked.reader)[semconv.AGENT_RUNS.name]
    assert tenants == {"t0", "t1", "t2", semconv.OVERFLOW_VALUE}


def test_idle_exactly_at_the_limit_keeps_the_slot_one_tick_past_frees_it(
    clocked: ClockedSdk,
) -> None:
    handler = clocked.handler(max_tenants=1, tenant_idle_s=600.0)
    _run(handler, "old", "r1")
    clocked.clock.now += 600.0  # idle exactly tenant_idle_s: still holds the only slot
    _run(handler, "new", "r2")
    assert _tenant_points(clocked.reader)[semconv.AGENT_RUNS.name] == {
        "old",
        semconv.OVERFLOW_VALUE,
    }
    clocked.clock.now += 0.001  # one tick past: the slot is free, "old" and its series are gone
    _run(handler, "new", "r3")
    assert _tenant_points(clocked.reader)[semconv.AGENT_RUNS.name] == {
        "new",
        semconv.OVERFLOW_VALUE,
    }


def test_a_tenant_s_repeated_tool_call_series_lasts_while_it_is_active_and_leaves_with_it(
    clocked: ClockedSdk,
) -> None:
    handler = clocked.handler(max_tenants=1, tenant_idle_s=600.0)
    with tenant_scope("acme"):
        handler.agent_start(AgentStartEvent("q", "r1"))
        for _ in range(2):  # the same call twice: a repeated tool call
            handler.end_tool(handler.start_tool("r1", "search", arguments={"q": 1}))
        handler.agent_end(AgentEndEvent("r1", "answer", 10.0, 1))
    repeated = semconv.REPEATED_TOOL_CALLS.name
    for step, run_id in ((500.0, "r2"), (500.0, "r3")):  # active: never idle 600 s
        clocked.clock.now += step
        _run(handler, "acme", run_id)
        assert _tenant_points(clocked.reader)[repeated] == {"acme"}
    clocked.clock.now += 600.001  # idle past the limit: the tenant and its series leave
    _run(handler, "new", "r4")
    assert _tenant_points(clocked.reader)[repeated] == set()


def test_a_returning_tenant_starts_at_zero(clocked: ClockedSdk) -> None:
    handler = clocked.handler(tenant_idle_s=60.0)
    for index in range(5):
        _run(handler, "acme", f"a{index}")

    def runs() -> float:
        data = clocked.reader.get_metrics_data()
        assert data is not None
        return sum(
            p.value
            for rm in data.resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
            if m.name == semconv.AGENT_RUNS.name
            for p in m.data.data_points
            if (p.attributes or {}).get(semconv.TENANT_ID) == "acme"
        )

    assert runs() == 5
    clocked.clock.now += 61.0
    assert runs() == 0  # forgotten at the collection after its idle time
    _run(handler, "acme", "b0")
    assert runs() == 1


def test_an_idle_tenant_vanishes_from_the_prometheus_endpoint() -> None:
    clock = Clock()
    telemetry = configure_telemetry(set_global=False, otlp=False, prometheus_port=0)
    try:
        handler = handler_on(telemetry, tenant_idle_s=60.0, clock=clock)
        _run(handler, "gone", "g1", bail=True)
        _run(handler, "stays", "s1")
        url = f"http://127.0.0.1:{telemetry.prometheus_port}/metrics"
        before = urllib.request.urlopen(url, timeout=30).read().decode()
        clock.now += 45.0
        _run(handler, "stays", "s2")
        clock.now += 30.0  # "gone" idle 75 s, "stays" 30 s
        after = urllib.request.urlopen(url, timeout=30).read().decode()
    finally:
        telemetry.shutdown(timeout_millis=5_000)
    assert 'tenant_id="gone"' in before
    assert 'tenant_id="gone"' not in after
    assert 'tenant_id="stays"' in after


class _Sink(MetricReader):
    """A cumulative reader whose collections may take as long as the test machine needs."""

    def __init__(self) -> None:
        super().__init__()
        self.data: MetricsData | None = None

    def _receive_metrics(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: object
    ) -> None:
        self.data = metrics_data

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: object) -> None:
        pass

    def points(self) -> list[tuple[str, dict[str, object]]]:
        self.data = None
        self.collect(timeout_millis=600_000)
        if self.data is None:
            return []
        return [
            (metric.name, dict(point.attributes or {}))
            for resource_metrics in self.data.resource_metrics
            for scope in resource_metrics.scope_metrics
            for metric in scope.metrics
            if metric.name in TENANT_COUNTER_NAMES
            for point in metric.data.data_points
        ]


WEEK_S: Final = 604_800.0
TENANTS: Final = 50_000
ACTIVE: Final = 1_000
ARRIVAL_S: Final = WEEK_S / TENANTS  # a new tenant every ~12 s for a simulated week


def _churn_handler(provider: MeterProvider, clock: Clock) -> OTelCallbackHandler:
    return OTelCallbackHandler(
        meter_provider=provider,
        max_tenants=ACTIVE,
        tenant_idle_s=ARRIVAL_S * ACTIVE - 1.0,  # so at most 1,000 are active at once
        clock=clock,
    )


def _reported(handler: OTelCallbackHandler) -> set[object]:
    """The tenants the runs counter's callback reports now (what the next collection gets)."""
    store = handler._core.metrics.counters
    return {s.attributes.get(semconv.TENANT_ID) for s in store.snapshot(semconv.AGENT_RUNS.name)}


def test_churn_a_week_of_50000_tenants_1000_active_at_a_time() -> None:
    """Every tenant that runs gets its own series (never ``__overflow__``), and what a
    collection reports stays within active tenants x the per-tenant budget."""
    sink = _Sink()
    provider = MeterProvider(metric_readers=[sink], views=[cardinality_view()])
    clock = Clock()
    handler = _churn_handler(provider, clock)
    per_tenant_budget = sum(per_tenant_sets(name) for name in TENANT_COUNTER_NAMES)
    since_last: set[str] = set()
    try:
        for index in range(TENANTS):
            clock.now += ARRIVAL_S
            tenant = f"tenant-{index}"
            _run(handler, tenant, f"r{index}", bail=index % 10 == 0)
            since_last.add(tenant)
            if index % 900 == 899:  # more often than a tenant stays: each is seen while active
                reported = _reported(handler)
                assert since_last <= reported
                assert semconv.OVERFLOW_VALUE not in reported
                assert len(handler._core.tenants) <= ACTIVE
                since_last.clear()
            if index % 10_000 == 9_999:  # a real collection now and then
                points = sink.points()
                runs = {a.get(semconv.TENANT_ID) for n, a in points if n == semconv.AGENT_RUNS.name}
                assert f"tenant-{index}" in runs and semconv.OVERFLOW_VALUE not in runs
                assert len(runs) <= ACTIVE
                assert len(points) <= len(handler._core.tenants) * per_tenant_budget
    finally:
        provider.shutdown()


def test_churn_memory_stays_flat() -> None:
    """The handler's memory after the slots fill stays flat while 45,000 more tenants come
    and go (no reader: what is measured is the package's own state, not the SDK's)."""
    provider = MeterProvider(views=[cardinality_view()])
    clock = Clock()
    handler = _churn_handler(provider, clock)
    samples: list[int] = []
    try:
        for index in range(TENANTS):
            clock.now += ARRIVAL_S
            _run(handler, f"tenant-{index}", f"r{index}", bail=index % 10 == 0)
            if index == 4_999:
                gc.collect()
                tracemalloc.start()
            if index > 4_999 and index % 5_000 == 4_999:
                gc.collect()
                samples.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
        provider.shutdown()
    assert len(handler._core.tenants) <= ACTIVE
    print(f"traced bytes every 5,000 tenants after the slots filled: {samples}")
    assert len(samples) == 9
    # Allocated since the slots filled and still held: bounded by one turnover of the slots
    # (caches refill), not growing with the tenants that left.
    assert max(samples) - min(samples) < 2_000_000, samples


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("tenant_idle_s", 0, ValueError),
        ("tenant_idle_s", float("inf"), ValueError),
        ("tenant_idle_s", True, ValueError),
        ("tenant_histograms", "yes", TypeError),
        ("clock", 5, TypeError),
    ],
)
def test_bad_tenancy_options_fail_at_construction(
    option: str, value: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match=option):
        OTelCallbackHandler(**{option: value})  # type: ignore[arg-type]
