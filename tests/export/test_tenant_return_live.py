"""A tenant that leaves and comes back still pages, against a real Prometheus and the shipped rules.

The handler's idle time is short and its clock is the test's: the tenant runs, goes idle past
``tenant_idle_s`` (its series vanish from the endpoint, Prometheus marks them stale), then
returns and starts again at zero. The shipped rules, with their windows shortened in proportion
(as the fleet test does), read the restart as a counter reset and the silent-bail page fires.
"""

from __future__ import annotations

import time
from pathlib import Path

import yaml

from symfonic_otel import OTelCallbackHandler, tenant_scope
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, ReactLoopEndEvent
from symfonic_otel.export.setup import configure_telemetry
from tests.support.configured_handler import handler_on
from tests.support.fleet_support import shortened_rules, silent_bail_pages
from tests.support.manual_clock import Clock
from tests.support.prometheus_support import PrometheusServer, require_binary

RULES = Path(__file__).resolve().parents[2] / "dashboards" / "prometheus" / "symfonic-rules.yml"
FACTOR = 120  # 1h -> 30 s, 5m -> 10 s (the floor), for: 2m -> 1 s


def _runs(handler: OTelCallbackHandler, prefix: str, count: int, bail_every: int = 0) -> None:
    with tenant_scope("back"):
        for index in range(count):
            run_id = f"{prefix}-{index}"
            bail = bool(bail_every) and index % bail_every == 0
            handler.agent_start(AgentStartEvent("q", run_id))
            if bail:
                handler.react_loop_end(
                    ReactLoopEndEvent(run_id, 3, "list", True, 2, "tool_calls_with_no_text")
                )
            handler.agent_end(AgentEndEvent(run_id, "" if bail else "answer", 10.0, 2))


def test_a_tenant_that_leaves_and_returns_pages_again(tmp_path: Path) -> None:
    require_binary("prometheus")
    pages = set(silent_bail_pages(yaml.safe_load(RULES.read_text())))
    assert "SymfonicSilentBailBudgetBurn" in pages
    rules = tmp_path / "symfonic-rules.short.yml"
    rules.write_text(shortened_rules(RULES.read_text(), factor=FACTOR))
    clock = Clock()
    telemetry = configure_telemetry(set_global=False, otlp=False, prometheus_port=0)
    try:
        handler = handler_on(telemetry, tenant_idle_s=60.0, clock=clock)
        target = f"127.0.0.1:{telemetry.prometheus_port}"
        with PrometheusServer(
            tmp_path / "prom", scrape_targets=[target], rule_files=[rules]
        ) as prom:
            present = 'symfonic_agent_runs_total{tenant_id="back"}'
            _runs(handler, "first", 30)  # a healthy first stay
            assert prom.wait_for(lambda: prom.query(f"sum({present}) == 30"), timeout_s=30)

            clock.now += 61.0  # idle past tenant_idle_s: the next collection forgets it
            assert prom.wait_for(lambda: not prom.query(present), timeout_s=30), (
                "the idle tenant's series were still scraped"
            )

            # It returns: its series start again at zero, scraped before the bails.
            _runs(handler, "again-seed", 1)
            assert prom.wait_for(
                lambda: prom.query('symfonic_react_silent_bails_total{tenant_id="back"} == 0'),
                timeout_s=30,
            )
            deadline = time.monotonic() + 12.0
            batch = 0
            while time.monotonic() < deadline:  # half its runs bail, for ~12 s
                _runs(handler, f"again-{batch}", 4, bail_every=2)
                batch += 1
                time.sleep(0.5)

            def paging() -> bool:
                return any(
                    alert["labels"].get("alertname") == "SymfonicSilentBailBudgetBurn"
                    and alert["labels"].get("tenant_id") == "back"
                    and alert["state"] == "firing"
                    for alert in prom.alerts()
                )

            assert prom.wait_for(paging, timeout_s=45), prom.alerts()
            # increase() reads the restart as a reset: the bails of the second stay only.
            bails = prom.query(
                'sum(increase(symfonic_react_silent_bails_total{tenant_id="back"}[2m]))'
            )
            assert bails and 0 < float(bails[0]["value"][1]) <= 2 * batch * 1.5
    finally:
        telemetry.shutdown(timeout_millis=5_000)
