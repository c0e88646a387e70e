"""Each option of ``OTelCallbackHandler`` reaches the part it configures: a test per option
that fails when the option is dropped on its way or replaced by its default."""

from __future__ import annotations

from opentelemetry.sdk.metrics.export import HistogramDataPoint

from symfonic_otel import semconv
from symfonic_otel.emit.budget import series_budget
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.manual_clock import Clock

RUNS = semconv.AGENT_RUNS.name


def _run(handler: object, run_id: str, tenant: str | None = None) -> None:
    handler.agent_start(AgentStartEvent(query="q", run_id=run_id), tenant_id=tenant)  # type: ignore[attr-defined]
    handler.agent_end(  # type: ignore[attr-defined]
        AgentEndEvent(run_id=run_id, final_response="ok", duration_ms=10.0, node_count=None)
    )


def test_clock_measures_tenant_idleness(telemetry: InMemoryTelemetry) -> None:
    clock = Clock(now=100.0)
    handler = telemetry.handler(max_tenants=1, tenant_idle_s=10.0, clock=clock)
    _run(handler, "r1", "acme")
    clock.now += 10.5  # on the handler's clock only: the process clock hardly moved
    _run(handler, "r2", "globex")
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "globex"}) == 1
    assert telemetry.value(RUNS, {semconv.TENANT_ID: semconv.OVERFLOW_VALUE}) == 0


def test_tenant_idle_s_decides_when_a_slot_is_given_back(telemetry: InMemoryTelemetry) -> None:
    clock = Clock(now=100.0)
    handler = telemetry.handler(max_tenants=1, tenant_idle_s=5.0, clock=clock)
    _run(handler, "r1", "acme")
    clock.now += 5.5  # past 5 s, far below the default idle time
    _run(handler, "r2", "globex")
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "globex"}) == 1


def test_max_tenants_caps_the_tenants_at_exactly_its_value(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(max_tenants=2)
    for i, tenant in enumerate(("a", "b", "c")):
        _run(handler, f"r{i}", tenant)
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "b"}) == 1
    assert telemetry.value(RUNS, {semconv.TENANT_ID: semconv.OVERFLOW_VALUE}) == 1


def test_tenant_histograms_puts_the_tenant_on_histograms(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(tenant_histograms=True)
    _run(handler, "r1", "acme")
    [(attrs, point)] = telemetry.points(semconv.AGENT_DURATION.name)
    assert isinstance(point, HistogramDataPoint)
    assert attrs[semconv.TENANT_ID] == "acme"


def test_without_tenant_histograms_histograms_carry_no_tenant(
    telemetry: InMemoryTelemetry,
) -> None:
    _run(telemetry.handler(), "r1", "acme")
    [(attrs, _)] = telemetry.points(semconv.AGENT_DURATION.name)
    assert semconv.TENANT_ID not in attrs


def test_max_open_runs_keeps_exactly_that_many_runs_open(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(max_open_runs=2)
    handler.agent_start(AgentStartEvent(query="q", run_id="r1"))
    handler.agent_start(AgentStartEvent(query="q", run_id="r2"))
    assert handler.open_runs == 2
    handler.agent_start(AgentStartEvent(query="q", run_id="r3"))
    assert handler.open_runs == 2  # one past the cap: the oldest gives way
    assert not handler.is_open("r1")
    handler.close_open_runs()


def test_agent_name_names_the_run_span_and_the_metrics(telemetry: InMemoryTelemetry) -> None:
    _run(telemetry.handler(agent_name="planner"), "r1")
    telemetry.span(semconv.agent_span_name("planner"))
    [(attrs, _)] = telemetry.points(RUNS)
    assert attrs[semconv.GEN_AI_AGENT_NAME] == "planner"


def test_tenant_id_is_the_default_tenant(telemetry: InMemoryTelemetry) -> None:
    _run(telemetry.handler(tenant_id="acme"), "r1")
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "acme"}) == 1


def test_the_series_budget_scales_histograms_by_tenants_only_with_tenant_histograms() -> None:
    name = semconv.AGENT_DURATION.name
    assert series_budget(10)[name] == 5
    assert series_budget(10, tenant_histograms=True)[name] == 5 * (10 + 2)
