"""Every tenant keeps its own series: handler budgets and the SDK cardinality limit agree.

The OpenTelemetry SDK keeps 2,000 attribute sets per instrument by default and folds the rest
into one ``otel_metric_overflow="true"`` series without a tenant. These tests use the real
Prometheus exporter of ``configure_telemetry`` (scraped over HTTP, as Prometheus would) and the
real SDK limit, never an in-memory reader without one.
"""

from __future__ import annotations

import re
import urllib.request
from types import SimpleNamespace
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from prometheus_client.parser import text_string_to_metric_families

from symfonic_otel import OTelCallbackHandler, semconv, tenant_scope
from symfonic_otel.emit.budget import (
    CARDINALITY_LIMIT,
    PER_TENANT,
    cardinality_view,
    per_tenant_sets,
    required_cardinality_limit,
    series_budget,
)
from symfonic_otel.emit.tenant_counters import TENANT_COUNTERS
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    AskUserQuestionEvent,
    FabricationDetectedEvent,
    LLMEndEvent,
    ReactLoopEndEvent,
)
from symfonic_otel.export.setup import Telemetry, configure_telemetry
from tests.support.metric_budget import metrics_within_budget

OUTCOMES = ("completed", "error", "cancelled")
TENANT_INSTRUMENTS = tuple(PER_TENANT)


def _scrape(telemetry: Telemetry) -> tuple[int, str]:
    url = f"http://127.0.0.1:{telemetry.prometheus_port}/metrics"
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status, response.read().decode()


def _every_kind_of_run(handler: OTelCallbackHandler, tenant: str, index: int) -> None:
    """One run per outcome (plus an empty answer, a bail, a fabrication check, an abandon)."""
    with tenant_scope(tenant):
        for outcome in (*OUTCOMES, "empty"):
            run_id = f"{tenant}-{outcome}-{index}"
            handler.agent_start(AgentStartEvent("q", run_id))
            handler.llm_end(
                LLMEndEvent(
                    model=f"model-{index % 200}",
                    output="x",
                    usage={"input_tokens": 5, "output_tokens": 1},
                    run_id=run_id,
                    node_name=("react", "react_synthesize_fallback", "critic")[index % 3],
                    outcome="error" if outcome == "error" else "completed",
                ),
                error_type="RateLimitError" if outcome == "error" else None,
                time_to_first_chunk_s=0.2,
            )
            for _ in range(2):  # the same call twice: a repeated tool call for every tenant
                handler.end_tool(
                    handler.start_tool(run_id, f"tool-{index % 50}", arguments={"q": 1}),
                    error_type="TimeoutError" if outcome == "error" else None,
                )
            if outcome == "empty":
                handler.react_loop_end(
                    ReactLoopEndEvent(run_id, 0, "NoneType", False, 0, "no_content_no_tool_calls")
                )
                handler.fabrication_detected(
                    FabricationDetectedEvent(
                        run_id, "observe", "observed", [], 0.8, 0.5, "", None, False
                    )
                )
            handler.agent_end(
                AgentEndEvent(
                    run_id,
                    "" if outcome == "empty" else "answer",
                    10.0,
                    1,
                    outcome="completed" if outcome == "empty" else outcome,  # type: ignore[arg-type]
                    stop_reason="max_tokens" if index % 2 else None,
                )
            )
        paused = f"{tenant}-paused-{index}"
        handler.agent_start(AgentStartEvent("q", paused))
        handler.ask_user_question(AskUserQuestionEvent("Which one?", run_id=paused))
        handler.agent_end(AgentEndEvent(paused, None, 5.0, 1))
        handler.agent_start(AgentStartEvent("q", f"{tenant}-abandoned-{index}"))
    handler.close_open_runs()


def test_five_hundred_tenants_each_keep_a_series_on_every_instrument() -> None:
    telemetry = configure_telemetry(set_global=False, otlp=False, prometheus_port=0)
    try:
        handler = OTelCallbackHandler(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
        tenants = [f"tenant-{index:03d}" for index in range(500)]
        for index, tenant in enumerate(tenants):
            _every_kind_of_run(handler, tenant, index)
        status, text = _scrape(telemetry)
    finally:
        telemetry.shutdown(timeout_millis=5_000)
    assert status == 200
    assert "otel_metric_overflow" not in text
    families = {family.name: family for family in text_string_to_metric_families(text)}
    for spec in TENANT_COUNTERS:
        name = spec.prometheus_name.removesuffix("_total")
        samples = families[name].samples
        seen = {sample.labels.get("tenant_id") for sample in samples}
        # Synthesis series appear with a tenant's first fallback (every third tenant's node).
        expected = tenants[1::3] if spec is semconv.SYNTHESIS_FALLBACKS else tenants
        missing = set(expected) - seen
        assert not missing, (spec.name, sorted(missing)[:5])
    for spec in (
        semconv.CLIENT_OPERATION_DURATION,
        semconv.CLIENT_TOKEN_USAGE,
        semconv.AGENT_DURATION,
        semconv.REACT_ITERATIONS,
        semconv.CLIENT_TIME_TO_FIRST_CHUNK,
        semconv.EXECUTE_TOOL_DURATION,
        semconv.INVOKE_AGENT_INFERENCE_CALLS,
        semconv.INVOKE_AGENT_TOOL_CALLS,
    ):  # histograms carry no tenant by default
        samples = families[spec.prometheus_name].samples
        assert samples, spec.name
        assert not any("tenant_id" in sample.labels for sample in samples), spec.name
    # A series per tenant and outcome on the headline counter, with the true counts.
    runs = [s for s in families["symfonic_agent_runs"].samples if s.name.endswith("_total")]
    for tenant in tenants[::50]:
        mine = {
            # An absent label is exposed as "" (the same thing to Prometheus).
            (s.labels["symfonic_run_outcome"], s.labels.get("symfonic_response_empty") or None): (
                s.value
            )
            for s in runs
            if s.labels["tenant_id"] == tenant
        }
        assert mine[("completed", "false")] == 1
        assert mine[("completed", "true")] == 1
        assert mine[("error", None)] == 1
        assert mine[("cancelled", None)] == 1
        assert mine[("abandoned", None)] == 1
        assert mine[("completed", None)] == 1  # the paused run (its own series)


def test_a_surrogate_error_type_never_breaks_the_scrape() -> None:
    telemetry = configure_telemetry(set_global=False, otlp=False, prometheus_port=0)
    try:
        handler = OTelCallbackHandler(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
        hostile = "Rate\ud800Limit\x00Error\udfff"
        with tenant_scope("acme\ud83d"):
            handler.agent_start(AgentStartEvent("q", "r\ud800"))
            handler.llm_end(
                LLMEndEvent(
                    model="gpt\udc00-4o",
                    output="",
                    usage={},
                    run_id="r\ud800",
                    node_name="re\x00act",
                    outcome="error",
                    stop_reason="s\ud800",
                ),
                error_type=hostile,
                provider="prov\ud800ider",
            )
            handler.agent_end(
                AgentEndEvent("r\ud800", None, 1.0, None, outcome="error", stop_reason="x\ud800"),
                error_type=hostile,
            )
        statuses = []
        for _ in range(3):  # and every later scrape too
            status, text = _scrape(telemetry)
            statuses.append(status)
    finally:
        telemetry.shutdown(timeout_millis=5_000)
    assert statuses == [200, 200, 200]
    text.encode("utf-8")  # valid UTF-8 throughout
    families = list(text_string_to_metric_families(text))  # and parseable exposition
    assert families
    assert 'error_type="Rate\ufffdLimit\ufffdError\ufffd"' in text


@pytest.mark.parametrize("max_tenants", [3, 20])
def test_the_budget_arithmetic_holds_against_the_sdk_limit(max_tenants: int) -> None:
    """With the SDK limit set to ``required_cardinality_limit(max_tenants)``, a flood of
    tenants, models, nodes, providers, error types and stop reasons never reaches the SDK's
    overflow series, stays within each instrument's budget, and every admitted tenant keeps a
    series of its own on every tenant-labelled instrument."""
    limit = required_cardinality_limit(max_tenants)
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], views=[cardinality_view(limit)])
    handler = OTelCallbackHandler(meter_provider=provider, max_tenants=max_tenants)
    for index in range(max_tenants * 3):
        tenant = f"t{index}"
        with tenant_scope(tenant):
            for call in range(40):
                run_id = f"{tenant}-{call}"
                handler.agent_start(AgentStartEvent("q", run_id))
                handler.llm_end(
                    LLMEndEvent(
                        model=f"model-{index}-{call}",
                        output="x",
                        usage={"input_tokens": 1, "output_tokens": 1},
                        run_id=run_id,
                        node_name=f"node-{call}",
                        outcome="error" if call % 2 else "completed",
                        error_type=f"Error{call}",
                    ),
                    provider=f"provider-{call}",
                    operation_name=("chat", "text_completion", "embeddings", f"op{call}")[call % 4],
                    time_to_first_chunk_s=0.1,
                )
                handler.end_tool(
                    handler.start_tool(run_id, f"tool-{index}-{call}"),
                    error_type=f"ToolError{call}" if call % 3 else None,
                )
                if call % 5 == 0:
                    handler.interrupt(SimpleNamespace(name=f"i{call}", run_id=run_id))
                handler.llm_end(
                    LLMEndEvent(
                        model=f"model-{call}",
                        output="",
                        usage={},
                        run_id=run_id,
                        node_name="react_synthesize_fallback",
                    )
                )
                handler.fabrication_detected(
                    FabricationDetectedEvent(
                        run_id, f"mode{call}", f"act{call}", [], 0.8, 0.5, "", None, False
                    )
                )
                handler.react_loop_end(ReactLoopEndEvent(run_id, 0, "str", False, 0, "other"))  # type: ignore[arg-type]
                handler.agent_end(
                    AgentEndEvent(
                        run_id, "x", 1.0, 1, outcome=f"o{call % 7}", stop_reason=f"s{call}"
                    )  # type: ignore[arg-type]
                )
    data = reader.get_metrics_data()
    budget = series_budget(max_tenants)
    admitted = {f"t{index}" for index in range(max_tenants)}
    for name, attributes in metrics_within_budget(data, budget):
        if name in TENANT_INSTRUMENTS:
            tenants = {a.get(semconv.TENANT_ID) for a in attributes}
            assert admitted <= tenants, (name, admitted - tenants)
            assert semconv.OVERFLOW_VALUE in tenants, name
    provider.shutdown()


def test_configure_telemetry_limit_covers_several_default_handlers() -> None:
    assert required_cardinality_limit(handlers=5) <= CARDINALITY_LIMIT
    assert required_cardinality_limit(500, handlers=5, tenant_histograms=True) <= CARDINALITY_LIMIT
    assert max(series_budget(500).values()) > 2_000  # why the SDK default would not do


def test_docs_state_the_budget_of_every_instrument() -> None:
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "reference" / "metrics.md"
    text = page.read_text(encoding="utf-8")
    section = text.split("<!-- series-budget:start -->")[1].split("<!-- series-budget:end -->")[0]
    rows: dict[str, Any] = {}
    for line in section.strip().splitlines()[2:]:
        cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
        rows[cells[0]] = cells
    budget = series_budget(10_000)
    assert set(rows) == set(budget)
    for name, count in budget.items():
        assert re.sub(r"[^0-9]", "", rows[name][-1]) == str(count), name


@pytest.mark.parametrize(
    ("arguments", "tenants", "per_tenant_histograms", "agent_names", "handlers"),
    [
        # The defaults: one handler, histograms without a tenant, one agent name.
        ({}, 10_000, False, 1, 1),
        ({"max_tenants": 20}, 20, False, 1, 1),  # the token-usage pool is the largest here
        ({"max_tenants": 20, "tenant_histograms": True}, 20, True, 1, 1),
        ({"max_tenants": 20, "agent_names": 3}, 20, False, 3, 1),
        ({"agent_names": 2}, 10_000, False, 2, 1),  # the stop-reason counter, per agent name
        ({"max_tenants": 500, "handlers": 3}, 500, False, 1, 3),
    ],
)
def test_required_limit_is_the_largest_instrument_budget_times_the_handlers(
    arguments: dict[str, Any],
    tenants: int,
    per_tenant_histograms: bool,
    agent_names: int,
    handlers: int,
) -> None:
    budget = series_budget(
        max_tenants=tenants, tenant_histograms=per_tenant_histograms, agent_names=agent_names
    )
    assert required_cardinality_limit(**arguments) == max(budget.values()) * handlers


def test_each_option_of_the_required_limit_changes_it() -> None:
    """The options are no decoration: each one, away from its default, asks for more sets."""
    base = required_cardinality_limit(20)
    assert required_cardinality_limit(20, handlers=2) == 2 * base
    assert required_cardinality_limit(20, tenant_histograms=True) > base
    assert required_cardinality_limit(20, agent_names=3) > base


@pytest.mark.parametrize(
    "name",
    [
        semconv.LLM_COST.name,
        semconv.LLM_TOKENS.name,
        semconv.SYNTHESIS_FALLBACKS.name,
        semconv.FABRICATION_DETECTIONS.name,
    ],
)
def test_a_tenant_counter_without_the_agent_label_holds_as_many_sets_whatever_the_agent_names(
    name: str,
) -> None:
    """Cost, tokens, synthesis fallbacks and fabrication detections carry no agent name: more
    agent names add no set there, while the runs counter gets its coarse sets per name."""
    assert per_tenant_sets(name, agent_names=5) == per_tenant_sets(name)
    runs = semconv.AGENT_RUNS.name
    assert per_tenant_sets(runs, agent_names=5) == 5 * per_tenant_sets(runs)
