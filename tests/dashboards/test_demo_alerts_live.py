"""The demo's default mix in a fresh Prometheus with the shipped rules: the page, for one tenant.

``symfonic-otel demo`` is there to show the silent-bail page for its noisy tenant. Any other
alert going off in a fresh setup (orphaned runs, dropped events) reads as a fault of the demo
the first time, so those faults sit behind ``--faults``. The rules are the shipped ones with
their windows and ``for:`` scaled down together, so the test runs the shipped logic, faster.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from tests.support.fleet_support import (
    DASHBOARDS,
    RULES,
    DemoProcess,
    shortened_rules,
    silent_bail_pages,
)
from tests.support.prometheus_support import PrometheusServer, require_binary

# 30 m windows become 3 min, a 15 m `for:` 90 s: long enough windows that the ordinary
# tenants' low rates are not mistaken for a fault by sampling noise alone.
FACTOR = 10
NOISY = "globex"
TELEMETRY_HEALTH = frozenset({"SymfonicOrphanedRuns", "SymfonicTelemetryEventsDropped"})
# The noisy tenant's bails are loop cuts: its agents loop, so the looping-runs ticket may open
# for it beside the page (for it alone, like the page).
LOOPING_TICKET = "SymfonicAgentLoopingRuns"
# After the page fires, how long every other alert gets to show up: the longest shipped `for:`
# (15 m, so 90 s here) plus the time an alert needs to go pending at the demo's rate.
WATCH_S = 100.0

pytestmark = pytest.mark.timeout(240)


def _inhibited_under(pages: set[str]) -> set[str]:
    """Alerts the shipped Alertmanager config silences while one of ``pages`` fires."""
    config = yaml.safe_load((DASHBOARDS / "alertmanager" / "alertmanager.yml").read_text())
    inhibited: set[str] = set()
    for rule in config.get("inhibit_rules", []):
        sources = {m.split("=", 1)[1].strip('"') for m in rule["source_matchers"]}
        if sources <= pages:
            inhibited |= {m.split("=", 1)[1].strip('"') for m in rule["target_matchers"]}
    return inhibited


def _alerts(prom: PrometheusServer) -> set[tuple[str, str, str]]:
    return {
        (alert["labels"]["alertname"], alert["labels"].get("tenant_id", ""), alert["state"])
        for alert in prom.alerts()
        if alert.get("state") in ("pending", "firing")
    }


def test_the_default_mix_fires_only_the_silent_bail_page(tmp_path: Path) -> None:
    require_binary("prometheus")
    pages = set(silent_bail_pages(yaml.safe_load(RULES.read_text())))
    # What may fire: the page, what it silences, and the ticket that says the tenant loops.
    notified = pages | _inhibited_under(pages) | {LOOPING_TICKET}
    rules = tmp_path / "symfonic-rules.yml"
    rules.write_text(shortened_rules(RULES.read_text(), factor=FACTOR))
    with (
        DemoProcess(tmp_path / "demo", duration_s=200.0, rate=20) as demo,
        PrometheusServer(
            tmp_path / "prometheus", scrape_targets=[demo.target], rule_files=[rules]
        ) as prom,
    ):
        seen: set[tuple[str, str, str]] = set()

        def paged() -> bool:
            seen.update(_alerts(prom))
            return any(
                name in pages and tenant == NOISY and state == "firing"
                for name, tenant, state in seen
            )

        assert prom.wait_for(paged, timeout_s=120, interval_s=1.0), (seen, prom.log_tail())
        deadline = time.monotonic() + WATCH_S
        while time.monotonic() < deadline:
            seen.update(_alerts(prom))
            time.sleep(1.0)
        assert demo.running(), demo.stderr()[-2000:]
    fired = {(name, tenant) for name, tenant, state in seen if state == "firing"}
    health = {name for name, _, _ in seen if name in TELEMETRY_HEALTH}
    # The page, for the noisy tenant only (or the slow-burn ticket Alertmanager inhibits under
    # it, or the looping-runs ticket: its bails are loop cuts); nothing else fires, and the
    # telemetry-health alerts never even go pending. (With --faults they do: test_dashboards_live
    # runs the demo so and needs their panels' data.)
    assert {name for name, _ in fired} <= notified, fired
    assert {tenant for _, tenant in fired} == {NOISY}, fired
    assert health == set(), seen
