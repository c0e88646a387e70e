"""The "Recovery ratio" panel against a real Prometheus scraping the real plugin.

One tenant whose every synthesis fallback fails (blank output), one whose every other fallback
recovers: the panel's query, as shipped, reads 0 for the first (never "No data": no
``symfonic_synthesis_recovered="true"`` series exists for it), one half for the second, and
nothing for a tenant with no fallback at all.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from tests.support.fleet_support import DASHBOARDS
from tests.support.prometheus_support import PrometheusServer, free_port, require_binary
from tests.support.scraped_handler import in_background, scraped_handler

pytestmark = pytest.mark.timeout(120)

FAILING = "bust"  # every fallback came back blank
HALF = "halfway"  # every other fallback recovered
NONE = "calm"  # runs, but no fallback


def _panel_expr(title: str) -> str:
    board: dict[str, Any] = json.loads((DASHBOARDS / "symfonic-agent-overview.json").read_text())
    panels = list(board["panels"])
    for row in board["panels"]:
        panels.extend(row.get("panels", []))
    (panel,) = [p for p in panels if p.get("title") == title]
    (target,) = panel["targets"]
    expr: str = target["expr"]
    return expr


def _for_tenant(expr: str, tenant: str) -> str:
    expr = expr.replace("$__range", "1m").replace("$tenant", tenant)
    assert "$" not in expr, expr
    return expr


@contextlib.contextmanager
def fallback_traffic(port: int) -> Iterator[None]:
    """The real handler behind the SDK's Prometheus reader, one run per tenant every 0.2 s."""
    stop = threading.Event()
    with scraped_handler(port) as handler:

        def one_run(tenant: str, index: int) -> None:
            run_id = f"{tenant}-{index}"
            with tenant_scope(tenant):
                handler.agent_start(AgentStartEvent(query="q", run_id=run_id))
            if tenant != NONE:
                recovered = tenant == HALF and index % 2 == 0
                handler.llm_end(
                    LLMEndEvent(
                        model="gpt-4o-mini",
                        output="an answer" if recovered else "",
                        usage={},
                        run_id=run_id,
                        node_name=semconv.NODE_SYNTHESIZE_FALLBACK,
                        duration_ms=10.0,
                    )
                )
            handler.agent_end(AgentEndEvent(run_id, "an answer", 20.0, 1))

        def produce() -> None:
            index = 0
            while not stop.is_set():
                for tenant in (FAILING, HALF, NONE):
                    one_run(tenant, index)
                index += 1
                stop.wait(0.2)

        with in_background(produce, stop):
            yield


def test_recovery_ratio_reads_zero_when_every_fallback_failed(tmp_path: Path) -> None:
    require_binary("prometheus")
    expr = _panel_expr("Recovery ratio")
    port = free_port()
    with (
        fallback_traffic(port),
        PrometheusServer(tmp_path / "prometheus", scrape_targets=[f"127.0.0.1:{port}"]) as prom,
    ):
        fallbacks = "symfonic_react_synthesis_fallbacks_total"

        def counted() -> bool:
            rows = prom.query(f"sum by (tenant_id) (increase({fallbacks}[1m])) > 2")
            return {row["metric"]["tenant_id"] for row in rows} == {FAILING, HALF}

        assert prom.wait_for(counted, timeout_s=40), prom.log_tail()
        # The premise: the failing tenant has no recovered="true" series at all.
        recovered = f'{fallbacks}{{tenant_id="{FAILING}",symfonic_synthesis_recovered="true"}}'
        assert not prom.query(recovered)

        (row,) = prom.query(_for_tenant(expr, FAILING))
        assert float(row["value"][1]) == 0.0
        (row,) = prom.query(_for_tenant(expr, HALF))
        assert 0.3 < float(row["value"][1]) < 0.7
        assert prom.query(_for_tenant(expr, NONE)) == []  # no fallback: no ratio
        (row,) = prom.query(_for_tenant(expr, f"{FAILING}|{NONE}"))
        assert float(row["value"][1]) == 0.0
