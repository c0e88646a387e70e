"""Step caps, live: a tenant whose LangChain agents hit their step cap pages; another does not.

Real agents (LangGraph's prebuilt agent, ``create_agent`` with each call-limit middleware) over
scripted models run through ``LangChainCallbackHandler`` in this process, on the providers of
``configure_telemetry`` serving a Prometheus endpoint on a free loopback port. A real
Prometheus scrapes it with the shipped rules (every window and ``for:`` divided by ``FACTOR``).
``capped-co``'s runs hit the cap one time in three (the framework answers with a budget
message, the run ends normally); ``fine-co`` runs the same agents inside their budget.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from symfonic_otel import LangChainCallbackHandler
from tests.support.live_paging import live_paging
from tests.support.prometheus_support import PrometheusServer
from tests.support.step_cap_support import CAPS, cfg, run

FACTOR = 30  # 1h -> 120 s, 5m -> 10 s, `for: 2m` -> 4 s
CAPPED, FINE = "capped-co", "fine-co"
PAUSE_S = 0.1  # between two runs of one tenant: a few runs per second each

pytestmark = pytest.mark.timeout(240)


@contextlib.contextmanager
def traffic(handler: LangChainCallbackHandler) -> Iterator[None]:
    """Both tenants run agents until the block ends: every third run of ``CAPPED`` is capped."""
    stop = threading.Event()
    failures: list[BaseException] = []

    def produce() -> None:
        try:
            for index, cap in enumerate(itertools.cycle(CAPS)):
                if stop.is_set():
                    return
                agent = cap.capped() if index % 3 == 0 else cap.answered()
                run("invoke", agent, cfg(cap, CAPPED, handler))
                run("invoke", cap.answered(), cfg(cap, FINE, handler))
                stop.wait(PAUSE_S)
        except BaseException as exc:  # surfaced by the test, not lost in the thread
            failures.append(exc)

    worker = threading.Thread(target=produce, daemon=True)
    worker.start()
    try:
        yield
    finally:
        stop.set()
        worker.join(timeout=30)
        assert not worker.is_alive(), "the traffic thread did not stop"
        assert not failures, failures


def test_tenant_hitting_step_caps_pages_the_other_does_not(tmp_path: Path) -> None:
    with live_paging(tmp_path, FACTOR, "symfonic-rules.step-caps.yml") as live:
        pages, rules = live.pages, live.rules
        handler = LangChainCallbackHandler(handler=live.handler)
        target = f"127.0.0.1:{live.telemetry.prometheus_port}"
        with (
            PrometheusServer(
                tmp_path / "prometheus", scrape_targets=[target], rule_files=[rules]
            ) as prom,
            traffic(handler),
        ):
            assert prom.wait_for(lambda: prom.query("up == 1"), timeout_s=30), prom.log_tail()

            def alerting(state: str) -> set[str]:
                return {
                    alert["labels"].get("tenant_id", "")
                    for alert in prom.alerts()
                    if alert["labels"].get("alertname") in pages and alert["state"] == state
                }

            seen: set[str] = set()

            def capped_tenant_fires() -> bool:
                seen.update(alerting("pending") | alerting("firing"))
                return CAPPED in alerting("firing")

            fired = prom.wait_for(capped_tenant_fires, timeout_s=120, interval_s=1.0)
            assert fired, f"no page for {CAPPED}: {prom.alerts()}; {prom.log_tail()}"
            seen.update(alerting("pending") | alerting("firing"))
            assert FINE not in seen, seen

            # What the page rests on, as Prometheus has it: the cap's stop reason and empty
            # answers for the capped tenant, none for the other.
            stop = (
                "sum by (tenant_id) (symfonic_agent_stop_reasons_total"
                '{symfonic_run_stop_reason="recursion_limit"})'
            )
            by_tenant = {r["metric"]["tenant_id"]: float(r["value"][1]) for r in prom.query(stop)}
            assert by_tenant.get(CAPPED, 0) > 0 and by_tenant.get(FINE, 0) == 0, by_tenant
            empty = 'sum by (tenant_id) (symfonic_agent_runs_total{symfonic_response_empty="true"})'
            by_tenant = {r["metric"]["tenant_id"]: float(r["value"][1]) for r in prom.query(empty)}
            assert by_tenant.get(CAPPED, 0) > 0 and by_tenant.get(FINE, 0) == 0, by_tenant
