"""What one tenant costs on the Prometheus endpoint, and the docs' per-tenant arithmetic.

Measured on the real ``configure_telemetry`` endpoint (the SDK's Prometheus reader, scraped
over HTTP): every sample line that carries ``tenant_id`` is a line that tenant costs.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from symfonic_otel import OTelCallbackHandler, semconv, tenant_scope
from symfonic_otel.emit.budget import per_tenant_sets
from symfonic_otel.emit.tenant_counters import TENANT_COUNTERS
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    AskUserQuestionEvent,
    FabricationDetectedEvent,
    LLMEndEvent,
    ReactLoopEndEvent,
    ToolCallStartEvent,
)
from symfonic_otel.export.setup import configure_telemetry
from tests.support.exposition_traffic import scrape

# The series-budget table lives in the metrics reference of the docs site.
README = Path(__file__).resolve().parents[2] / "docs" / "reference" / "metrics.md"
TENANT = re.compile(r'tenant_id="([^"]*)"')


def _tenant_lines(tenant_histograms: bool, tenants: int = 60) -> Counter[str]:
    """Exposition lines per tenant after the demo's workload shape: 2 models, 2-3 model calls
    and 1-2 tools per run, one run in ten a silent bail recovered by a synthesis call."""
    telemetry = configure_telemetry(set_global=False, otlp=False, prometheus_port=0)
    try:
        handler = OTelCallbackHandler(
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
            tenant_histograms=tenant_histograms,
        )
        for tenant_index in range(tenants):
            tenant = f"tenant-{tenant_index}"
            with tenant_scope(tenant):
                for run_index in range(10):
                    run_id = f"{tenant}-{run_index}"
                    bail = (tenant_index + run_index) % 10 == 0
                    handler.agent_start(AgentStartEvent("q", run_id))
                    for call in range(2 + run_index % 2):
                        handler.llm_end(
                            LLMEndEvent(
                                model=("gpt-4o", "gpt-4o-mini")[call % 2],
                                output="x",
                                usage={"input_tokens": 100, "output_tokens": 10},
                                run_id=run_id,
                                node_name="react",
                            ),
                            provider="openai",
                        )
                    for tool in range(1 + run_index % 2):
                        handler.end_tool(handler.start_tool(run_id, ("search", "lookup")[tool]))
                    if bail:
                        handler.react_loop_end(
                            ReactLoopEndEvent(run_id, 3, "list", True, 2, "tool_calls_with_no_text")
                        )
                        handler.llm_end(
                            LLMEndEvent(
                                model="gpt-4o-mini",
                                output="recovered",
                                usage={"input_tokens": 50, "output_tokens": 5},
                                run_id=run_id,
                                node_name="react_synthesize_fallback",
                            ),
                            provider="openai",
                        )
                    handler.agent_end(
                        AgentEndEvent(run_id, "answer", 2.0, 2, stop_reason="end_turn")
                    )
        text = scrape(telemetry.prometheus_port or 0)
    finally:
        telemetry.shutdown(timeout_millis=5_000)
    lines = Counter[str]()
    for line in text.splitlines():
        match = TENANT.search(line) if line and not line.startswith("#") else None
        if match:
            lines[match.group(1)] += 1
    return lines


def test_a_tenant_costs_at_most_25_exposition_lines_by_default() -> None:
    lines = _tenant_lines(tenant_histograms=False)
    assert len(lines) == 60
    print(
        f"default: {min(lines.values())}-{max(lines.values())} lines per tenant,"
        f" {sum(lines.values())} for {len(lines)} tenants"
    )
    assert max(lines.values()) <= 25


def test_tenant_histograms_cost_what_the_docs_say() -> None:
    default = _tenant_lines(tenant_histograms=False, tenants=10)
    opted_in = _tenant_lines(tenant_histograms=True, tenants=10)
    print(
        f"tenant_histograms=True: {min(opted_in.values())}-{max(opted_in.values())} lines per"
        f" tenant (default {min(default.values())}-{max(default.values())})"
    )
    assert min(opted_in.values()) > 5 * max(default.values())


def _readme_per_tenant_sets() -> dict[str, int]:
    """The README budget table's per-tenant column: "N (...)" plus "+ 16 detailed"."""
    text = README.read_text(encoding="utf-8")
    section = text.split("<!-- series-budget:start -->")[1].split("<!-- series-budget:end -->")[0]
    sets: dict[str, int] = {}
    for line in section.strip().splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        name = cells[0].strip("`")
        first = re.match(r"(\d+)", cells[1])
        detailed = re.search(r"\+ (\d+) detailed", cells[1])
        if first and not cells[1].startswith("0 ("):
            sets[name] = int(first.group(1)) + (int(detailed.group(1)) if detailed else 0)
    return sets


def test_readme_per_tenant_sets_match_the_endpoint() -> None:
    """One tenant flooded with every label value: on each per-tenant counter the endpoint
    serves exactly the sets the README gives per tenant (cost: at most, its coarse sets need
    priced and unpriced models past the detail cap)."""
    readme = _readme_per_tenant_sets()
    assert readme == {spec.name: per_tenant_sets(spec.name) for spec in TENANT_COUNTERS}
    telemetry = configure_telemetry(set_global=False, otlp=False, prometheus_port=0)
    try:
        handler = OTelCallbackHandler(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
        with tenant_scope("flood"):
            ends = [
                ("answer", "completed"),
                ("", "completed"),
                (None, "completed"),
                ("x", "error"),
                ("x", "cancelled"),
                ("x", "mystery"),
            ]
            for index in range(40):
                run_id = f"r{index}"
                handler.agent_start(AgentStartEvent("q", run_id))
                for model in (f"m{index}", f"n{index}"):
                    handler.llm_end(
                        LLMEndEvent(
                            model=model,
                            output="x",
                            usage={"input_tokens": 1, "output_tokens": 1},
                            run_id=run_id,
                            node_name=f"node{index}",
                        )
                    )
                handler.llm_end(
                    LLMEndEvent(
                        model=f"s{index}",
                        output="x" if index % 2 else "",
                        usage={},
                        run_id=run_id,
                        node_name="react_synthesize_fallback",
                    )
                )
                for call in ("c1", "c2"):  # a repeated tool call
                    handler.tool_call_start(ToolCallStartEvent(call, "t", {"q": 1}, run_id=run_id))
                reason = ("tool_calls_with_no_text", "no_content_no_tool_calls", "odd")[index % 3]
                final, outcome = ends[index % len(ends)]
                if final is not None:  # a bail would make an unknown answer read empty
                    handler.react_loop_end(ReactLoopEndEvent(run_id, 0, "str", False, 0, reason))  # type: ignore[arg-type]
                pairs = sorted(semconv_pairs())
                mode, action = pairs[index % len(pairs)]
                handler.fabrication_detected(
                    FabricationDetectedEvent(run_id, mode, action, [], 0.8, 0.5, "", None, False)
                )
                stops = (*semconv.STOP_REASON_VALUES, *(f"pass{i}" for i in range(20)))
                handler.agent_end(
                    AgentEndEvent(
                        run_id,
                        final,
                        1.0,
                        1,
                        outcome=outcome,  # type: ignore[arg-type]
                        stop_reason=stops[index % len(stops)],
                    )
                )
            for index in range(40, 48):  # the rest of the exits, every known one at least once
                run_id = f"r{index}"
                handler.agent_start(AgentStartEvent("q", run_id))
                handler.agent_end(
                    AgentEndEvent(
                        run_id, "x", 1.0, 1, stop_reason=semconv.STOP_REASON_VALUES[index - 40]
                    )
                )
            handler.agent_start(AgentStartEvent("q", "paused"))
            handler.ask_user_question(AskUserQuestionEvent("Which one?", run_id="paused"))
            handler.agent_end(AgentEndEvent("paused", None, 5.0, 1))
            handler.agent_start(AgentStartEvent("q", "abandoned"))
        handler.close_open_runs()
        text = scrape(telemetry.prometheus_port or 0)
    finally:
        telemetry.shutdown(timeout_millis=5_000)
    served = Counter[str]()
    for line in text.splitlines():
        if 'tenant_id="flood"' in line and not line.startswith("#"):
            served[line.split("{", 1)[0]] += 1
    for spec in TENANT_COUNTERS:
        count = served[spec.prometheus_name]
        if spec is semconv.LLM_COST:
            assert 0 < count <= readme[spec.name], (spec.name, count)
        else:
            assert count == readme[spec.name], (spec.name, count, readme[spec.name])


def semconv_pairs() -> set[tuple[str, str]]:
    from symfonic_otel.emit.vocabulary import FABRICATION_PAIRS

    return {*FABRICATION_PAIRS, ("bogus", "pair")}
