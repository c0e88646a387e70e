"""Dashboards and alerts against a real Prometheus scraping the real plugin.

``symfonic-otel demo --prometheus-port`` serves the plugin's /metrics (the reference loop, the
real handler and the SDK's Prometheus reader), next to a low-volume tenant served by this test;
Prometheus scrapes both every second with a test copy of the rules whose windows and ``for:``
are shortened. Then every panel query of every dashboard (variables substituted) must return
data, and the silent-bail alert must go pending or firing for the noisy tenant only.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from symfonic_otel import tenant_scope
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    LLMEndEvent,
    ReactLoopEndEvent,
)
from tests.support.dashboard_queries import dashboard_queries
from tests.support.fleet_support import RULES, DemoProcess, silent_bail_pages
from tests.support.prometheus_support import PrometheusServer, free_port, require_binary
from tests.support.scraped_handler import in_background, scraped_handler

# The demo's default tenants; `globex` is the one whose silent-bail rate is several times the rest.
NOISY = "globex"
STEADY = ("acme", "initech", "umbrella", "hooli")
LOW_VOLUME = "tiny-co"  # every run a silent bail, but far below the volume guard
TENANTS = (NOISY, *STEADY, LOW_VOLUME)
DEMO_RATE = 25  # runs per second: ~5 per tenant, so a steady tenant's window holds ~200 runs

WINDOW = "40s"  # replaces every range window of the rules
FOR = "2s"  # replaces every `for:`
# The alerts that page on a tenant's silent-bail rate, as shipped.
SILENT_BAIL_PAGES = frozenset(silent_bail_pages(yaml.safe_load(RULES.read_text())))
# The recorded silent-bail ratio per tenant (the 10-minute one where there are several).
SILENT_BAIL_RATIO = min(
    re.findall(r"record:\s*(\S*silent_bail_ratio\S*)", RULES.read_text()),
    key=lambda name: (not name.endswith(":rate10m"), name),
)

pytestmark = pytest.mark.timeout(180)


# --- traffic: the demo, plus one low-volume tenant served next to it ---------------------------


@contextlib.contextmanager
def low_volume_target(port: int, duration_s: float) -> Iterator[None]:
    """A second scrape target: one tenant whose every run bails, one run every 3 s.

    Its bail rate is 100 %, far above the threshold, but its volume stays under the alert's
    minimum-volume guard: it must never page.
    """
    stop = threading.Event()
    with scraped_handler(port) as handler:

        def produce() -> None:
            deadline = time.monotonic() + duration_s
            index = 0
            while not stop.is_set() and time.monotonic() < deadline:
                run_id = f"{LOW_VOLUME}-{index}"
                with tenant_scope(LOW_VOLUME):
                    handler.agent_start(AgentStartEvent(query="q", run_id=run_id))
                handler.llm_end(
                    LLMEndEvent(
                        model="gpt-4o-mini",
                        output="",
                        usage={},
                        run_id=run_id,
                        node_name="react",
                        duration_ms=300.0,
                    )
                )
                handler.react_loop_end(
                    ReactLoopEndEvent(run_id, 0, "NoneType", False, 0, "no_content_no_tool_calls")
                )
                handler.agent_end(AgentEndEvent(run_id, "", 400.0, 1))
                index += 1
                stop.wait(3.0)

        with in_background(produce, stop):
            yield


# --- helpers -------------------------------------------------------------------------------------


def shortened_rules(text: str) -> str:
    """The rule file with every range window set to WINDOW and every ``for:`` to FOR."""
    text = re.sub(r"\[\d+[smhdw]\]", f"[{WINDOW}]", text)
    return re.sub(r"(?m)^(\s+for:)\s*\S+\s*$", rf"\g<1> {FOR}", text)


def _silent_bail_tenants(prom: PrometheusServer) -> set[str]:
    return {
        alert["labels"].get("tenant_id", "")
        for alert in prom.alerts()
        if alert["labels"].get("alertname") in SILENT_BAIL_PAGES
        and alert.get("state") in ("pending", "firing")
    }


# --- the test ------------------------------------------------------------------------------------


def test_every_panel_query_returns_data_and_silent_bail_alert_fires_for_noisy_tenant_only(
    tmp_path: Path,
) -> None:
    require_binary("prometheus")
    rules = tmp_path / "symfonic-rules.live.yml"
    rules.write_text(shortened_rules(RULES.read_text()))
    queries = dashboard_queries()
    assert len(queries) > 30

    low_volume_port = free_port()
    with (
        # --faults: the orphaned-run and dropped-event panels need those faults to have data.
        DemoProcess(tmp_path / "demo", duration_s=120.0, rate=DEMO_RATE, faults=True) as demo,
        low_volume_target(low_volume_port, duration_s=120.0),
        PrometheusServer(
            tmp_path / "prometheus",
            scrape_targets=[demo.target, f"127.0.0.1:{low_volume_port}"],
            rule_files=[rules],
        ) as prom,
    ):
        # The scrape works and the rules loaded.
        assert prom.wait_for(lambda: len(prom.query("up == 1")) == 2, timeout_s=30), prom.log_tail()
        loaded = {rule["name"] for group in prom.rules() for rule in group["rules"]}
        assert SILENT_BAIL_PAGES and loaded >= SILENT_BAIL_PAGES

        # The silent-bail alert goes pending / firing for the noisy tenant, never for another.
        seen: set[str] = set()

        def noisy_alerted() -> bool:
            seen.update(_silent_bail_tenants(prom))
            return NOISY in seen

        assert prom.wait_for(noisy_alerted, timeout_s=30), (
            f"{sorted(SILENT_BAIL_PAGES)} never fired for {NOISY}; alerts: {prom.alerts()}"
        )

        # Every panel query returns data (retried while counters accumulate).
        missing = dict.fromkeys(queries, True)

        def all_answered() -> bool:
            for key in [key for key, empty in missing.items() if empty]:
                if prom.query(key[2]):
                    missing[key] = False
            seen.update(_silent_bail_tenants(prom))
            return not any(missing.values())

        prom.wait_for(all_answered, timeout_s=20, interval_s=1.0)
        empty = [f"{board} / {title}: {expr}" for (board, title, expr), e in missing.items() if e]
        assert not empty, "panel queries without data:\n" + "\n".join(empty)

        # The tenant variable's label_values(symfonic_agent_runs_total, tenant_id) lists them all.
        tenants = set(prom.label_values("tenant_id", match="symfonic_agent_runs_total"))
        assert set(TENANTS) <= tenants

        # The low-volume tenant (100 % bails) and the steady tenants never alerted.
        seen.update(_silent_bail_tenants(prom))
        assert seen == {NOISY}, f"silent-bail alert for {sorted(seen - {NOISY})}"
        assert demo.running(), demo.stderr()[-2000:]

        # ... and it is the volume guard that keeps the low-volume tenant quiet: without it, its
        # 100 % bail rate would cross the threshold.
        # (Polled: a scrape that times out on a loaded machine marks a target's series stale
        # until the next scrape, so one instant query can miss a tenant.)
        def over_threshold() -> dict[str, float]:
            unguarded = prom.query(f"{SILENT_BAIL_RATIO} > 0.10")
            over = {s["metric"]["tenant_id"]: float(s["value"][1]) for s in unguarded}
            return over if LOW_VOLUME in over and NOISY in over else {}

        over = prom.wait_for(over_threshold, timeout_s=20) or over_threshold()
        assert over.get(LOW_VOLUME, 0.0) > 0.5, over
        assert NOISY in over and not set(STEADY) & set(over), over
