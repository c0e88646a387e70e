"""A new tenant's first silent bail is counted: its series exist at zero before it happens.

Prometheus' ``rate()`` and ``increase()`` never count a series' first sample, so a counter
series born with its first increment hides that increment. The handler creates a tenant's
counter series at zero when it first sees the tenant; a real Prometheus scraping the
``configure_telemetry`` endpoint shows the difference.
"""

from __future__ import annotations

from pathlib import Path

from symfonic_otel import OTelCallbackHandler, semconv, tenant_scope
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, ReactLoopEndEvent
from symfonic_otel.export.setup import configure_telemetry
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.prometheus_support import PrometheusServer

RATIO = (
    "sum by (tenant_id) (rate(symfonic_react_silent_bails_total[1m]))"
    " / sum by (tenant_id) (rate(symfonic_agent_runs_total[1m]))"
)


def test_first_bail_is_counted_and_a_quiet_tenant_reads_zero(tmp_path: Path) -> None:
    telemetry = configure_telemetry(set_global=False, otlp=False, prometheus_port=0)
    try:
        handler = OTelCallbackHandler(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
        target = f"127.0.0.1:{telemetry.prometheus_port}"
        with PrometheusServer(tmp_path, scrape_targets=[target]) as prometheus:
            for tenant in ("acme", "quiet"):
                with tenant_scope(tenant):
                    handler.agent_start(AgentStartEvent("q", f"{tenant}-1"))
            seeded = prometheus.wait_for(
                lambda: prometheus.query(
                    'symfonic_react_silent_bails_total{tenant_id="acme"} == 0'
                ),
                timeout_s=30,
            )
            assert seeded, "the new tenant's bail series was not scraped at zero"
            handler.react_loop_end(
                ReactLoopEndEvent("acme-1", 3, "list", True, 2, "tool_calls_with_no_text")
            )
            handler.agent_end(AgentEndEvent("acme-1", "", 10.0, 4))
            handler.agent_end(AgentEndEvent("quiet-1", "fine", 10.0, 1))

            counted = prometheus.wait_for(
                lambda: prometheus.query(
                    'sum(increase(symfonic_react_silent_bails_total{tenant_id="acme"}[1m])) > 0'
                ),
                timeout_s=30,
            )
            assert counted, "the first bail was not counted by increase()"
            ratios = prometheus.wait_for(
                lambda: (
                    {
                        r["metric"]["tenant_id"]: float(r["value"][1])
                        for r in prometheus.query(RATIO)
                        if r["metric"].get("tenant_id") in ("acme", "quiet")
                    }
                    or None
                ),
                timeout_s=30,
            )
    finally:
        telemetry.shutdown(timeout_millis=5_000)
    assert ratios is not None
    assert ratios["quiet"] == 0.0  # a tenant without bails reads 0 %, not absent
    assert ratios["acme"] > 0.5  # one run, one bail


def test_zero_series_of_a_new_tenant(telemetry: InMemoryTelemetry) -> None:
    """Which series a tenant gets at zero when first seen (and only once)."""
    handler = telemetry.handler(agent_name="support")
    for run_id in ("a", "b"):
        with tenant_scope("acme"):
            handler.agent_start(AgentStartEvent("q", run_id))
        handler.agent_end(AgentEndEvent(run_id, "x", 1.0, 1))

    def zeros(name: str) -> list[dict[str, object]]:
        return [a for a, v in telemetry.points(name, include_zeros=True) if v == 0]

    runs = {
        (a[semconv.RUN_OUTCOME], a.get(semconv.RESPONSE_EMPTY))
        for a in zeros("symfonic.agent.runs")
    }
    # Only what the shipped ratio alerts divide: empty answers and errors (completed runs with
    # an answer, also seeded, have the 2 real runs).
    assert runs == {("completed", True), ("error", None)}
    assert {a[semconv.REACT_TERMINATION_REASON] for a in zeros("symfonic.react.silent_bails")} == {
        "tool_calls_with_no_text",
        "no_content_no_tool_calls",
    }
    assert zeros("symfonic.fabrication.detections") == []  # appears with the first detection
    assert {a[semconv.RUN_STOP_REASON] for a in zeros("symfonic.agent.stop_reasons")} == {
        "end_turn",
        "max_tokens",
        "refusal",
    }
    assert all(a[semconv.TENANT_ID] == "acme" for a in zeros("symfonic.agent.runs"))
    assert telemetry.value("symfonic.agent.runs") == 2
