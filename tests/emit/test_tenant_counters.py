"""Per-tenant counter totals: merged across handlers of one provider, capped per tenant."""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from symfonic_otel import OTelCallbackHandler, semconv, tenant_scope
from symfonic_otel.emit.budget import cardinality_view
from symfonic_otel.emit.tenant_counters import TenantCounters
from symfonic_otel.emit.tenants import ActiveTenants
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent


def _tokens(reader: InMemoryMetricReader) -> dict[tuple[object, ...], float]:
    data = reader.get_metrics_data()
    assert data is not None
    return {
        tuple(sorted((p.attributes or {}).items())): p.value
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == semconv.LLM_TOKENS.name
        for p in m.data.data_points
    }


def test_two_handlers_on_one_provider_sum_into_one_series() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], views=[cardinality_view()])
    handlers = [
        OTelCallbackHandler(meter_provider=provider, agent_name=name) for name in ("a", "b")
    ]
    with tenant_scope("acme"):
        for index, handler in enumerate(handlers):
            run_id = f"r{index}"
            handler.agent_start(AgentStartEvent("q", run_id))
            handler.llm_end(
                LLMEndEvent(
                    model="gpt-4o",
                    output="x",
                    usage={"input_tokens": 10 * (index + 1), "output_tokens": 1},
                    run_id=run_id,
                )
            )
            handler.agent_end(AgentEndEvent(run_id, "x", 1.0, 1))
    key = tuple(
        sorted(
            {
                semconv.TENANT_ID: "acme",
                semconv.GEN_AI_REQUEST_MODEL: "gpt-4o",
                semconv.GEN_AI_TOKEN_TYPE: semconv.TOKEN_TYPE_INPUT,
            }.items()
        )
    )
    assert _tokens(reader)[key] == 30  # one series, both handlers' tokens
    provider.shutdown()


def test_detailed_sets_past_the_cap_fold_into_the_tenants_coarse_set() -> None:
    store = TenantCounters(ActiveTenants(), detail_cap=2)
    name = semconv.LLM_TOKENS.name
    fold = {semconv.TENANT_ID: "t", semconv.GEN_AI_REQUEST_MODEL: semconv.OTHER_VALUE}
    for model in ("m1", "m2", "m3", "m4"):
        store.add(name, "t", {semconv.TENANT_ID: "t", semconv.GEN_AI_REQUEST_MODEL: model}, 1, fold)
    totals = {s.attributes[semconv.GEN_AI_REQUEST_MODEL]: s.total for s in store.snapshot(name)}
    assert totals == {"m1": 1, "m2": 1, semconv.OTHER_VALUE: 2}  # exactly the cap, then folded
    store.add(name, "u", {semconv.TENANT_ID: "u", semconv.GEN_AI_REQUEST_MODEL: "m3"}, 1, fold)
    assert store.series_count(name) == 4  # another tenant has a cap of its own
    store.drop("t")
    assert store.series_count(name) == 1 and not store.knows("t")


def test_counts_of_a_handler_that_was_garbage_collected_are_still_exported() -> None:
    import gc

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], views=[cardinality_view()])
    now = [0.0]
    handler = OTelCallbackHandler(meter_provider=provider, tenant_idle_s=60.0, clock=lambda: now[0])
    with tenant_scope("acme"):
        handler.agent_start(AgentStartEvent("q", "r"))
        handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    del handler
    gc.collect()

    def runs() -> float:
        data = reader.get_metrics_data()
        return sum(
            p.value
            for rm in (data.resource_metrics if data else ())
            for sm in rm.scope_metrics
            for m in sm.metrics
            if m.name == semconv.AGENT_RUNS.name
            for p in m.data.data_points
        )

    assert runs() == 1  # recorded before the handler went away: still exported
    now[0] += 61.0
    assert runs() == 0  # one idle time later, gone like an idle tenant
    provider.shutdown()


def test_tenant_histograms_pass_through_the_langchain_handler_and_the_instrumentor() -> None:
    from symfonic_otel.instrumentation import SymfonicLangChainInstrumentor
    from symfonic_otel.langchain import LangChainCallbackHandler

    provider = MeterProvider(views=[cardinality_view()])
    lc = LangChainCallbackHandler(meter_provider=provider, tenant_histograms=True, max_tenants=7)
    assert lc._core._core.metrics.tenant_histograms is True
    assert lc._core._core.tenants.max_tenants == 7
    instrumentor = SymfonicLangChainInstrumentor()
    instrumentor.instrument(meter_provider=provider, tenant_histograms=True, tenant_idle_s=90.0)
    try:
        handler = instrumentor.callback_handler
        assert handler is not None
        core = handler._core._core
        assert core.metrics.tenant_histograms is True
        assert core.tenants.idle_s == 90.0
    finally:
        instrumentor.uninstrument()
    provider.shutdown()
