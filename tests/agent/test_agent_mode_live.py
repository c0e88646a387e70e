"""Scale-out, live: Prometheus in agent mode next to the agent processes, remote-writing to a
central Prometheus that evaluates the rules.

Two ``symfonic-otel demo`` processes serve their own /metrics; an agent-mode Prometheus (the
shipped agent configuration, targets and URL pointed at this test's processes) scrapes them and
remote-writes everything to a central Prometheus started with ``--web.enable-remote-write-
receiver`` and the shipped rules (windows divided by ``FACTOR``). The central one scrapes
nothing itself, yet its silent-bail recording rules and alerts must show what the fleet does:
globex bails (noisy in both processes), initech fails at the provider (noisy ``errors``: an
error-rate problem, not a silent-bail one), acme and umbrella are ordinary.
"""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.fleet_support import (
    DASHBOARDS,
    RULES,
    DemoProcess,
    demo_fleet,
    shortened_rules,
    silent_bail_pages,
)
from tests.support.prometheus_support import PrometheusServer, require_binary

FACTOR = 30
DEMO_RATE = 15
DURATION_S = 180  # longer than the test: the processes are stopped when it ends
FLEET = (
    ("acme,globex,initech", "globex=silent_bail,initech=errors"),
    ("globex,umbrella", "globex=silent_bail"),
)
BAILING = "globex"
ERRORING = "initech"
ORDINARY = ("acme", "umbrella")

pytestmark = pytest.mark.timeout(240)


def shipped_agent_config() -> dict[str, Any]:
    """The shipped agent-mode configuration in dashboards/prometheus/, or, until one ships, its
    minimal equivalent: scrape the local agent processes, remote-write everything."""
    for path in sorted(DASHBOARDS.rglob("*agent*.y*ml")):
        loaded: dict[str, Any] = yaml.safe_load(path.read_text())
        return loaded
    return {
        "global": {"scrape_interval": "15s"},
        "scrape_configs": [
            {"job_name": "symfonic-agent", "static_configs": [{"targets": ["127.0.0.1:9464"]}]}
        ],
        "remote_write": [{"url": "http://prometheus-central:9090/api/v1/write"}],
    }


def agent_config_for_test(
    shipped: dict[str, Any], targets: list[str], write_url: str
) -> dict[str, Any]:
    """``shipped`` scraping ``targets`` every second and writing to ``write_url``: its first
    scrape job (with its relabelling) gets the targets, other jobs go; every remote write keeps
    its settings but the URL, and sends at least every second."""
    config = copy.deepcopy(shipped)
    config.setdefault("global", {}).update(scrape_interval="1s", scrape_timeout="1s")
    job = config["scrape_configs"][0]
    for key in [key for key in job if key.endswith("_sd_configs")]:
        del job[key]
    job.pop("scrape_interval", None)
    job.pop("scrape_timeout", None)
    job["static_configs"] = [{"targets": targets}]
    config["scrape_configs"] = [job]
    assert config.get("remote_write"), "the agent configuration writes nowhere"
    for writer in config["remote_write"]:
        writer["url"] = write_url
        writer.pop("basic_auth", None)
        writer.pop("authorization", None)
        writer.pop("tls_config", None)
        writer.setdefault("queue_config", {})["batch_send_deadline"] = "1s"
    return config


def recorded_names(rules: dict[str, Any], contains: str) -> list[str]:
    return [
        rule["record"]
        for group in rules["groups"]
        for rule in group["rules"]
        if contains in rule.get("record", "")
    ]


def fleet(workdir: Path) -> contextlib.AbstractContextManager[list[DemoProcess]]:
    return demo_fleet(workdir, FLEET, duration_s=DURATION_S, rate=DEMO_RATE, seed=200)


def _by_tenant(result: list[dict[str, Any]]) -> dict[str, float]:
    return {series["metric"]["tenant_id"]: float(series["value"][1]) for series in result}


def test_agent_mode_remote_writes_to_a_central_prometheus_that_pages_on_the_bailing_tenant(
    tmp_path: Path,
) -> None:
    require_binary("prometheus")
    shipped_rules = yaml.safe_load(RULES.read_text())
    pages = set(silent_bail_pages(shipped_rules))
    bail_ratios = recorded_names(shipped_rules, "silent_bail_ratio")
    error_ratios = recorded_names(shipped_rules, "error_ratio")
    assert pages and bail_ratios and error_ratios
    rules = tmp_path / "symfonic-rules.central.yml"
    rules.write_text(shortened_rules(RULES.read_text(), factor=FACTOR))

    with (
        PrometheusServer(
            tmp_path / "central",
            scrape_targets=[],
            rule_files=[rules],
            extra_args=["--web.enable-remote-write-receiver"],
        ) as central,
        fleet(tmp_path) as processes,
        PrometheusServer(
            tmp_path / "agent",
            scrape_targets=[],
            agent_mode=True,
            config=agent_config_for_test(
                shipped_agent_config(),
                [process.target for process in processes],
                f"{central.url}/api/v1/write",
            ),
        ),
    ):
        # The central Prometheus scrapes nothing: everything it has came by remote write.
        assert central.targets() == []
        assert central.wait_for(
            lambda: len(central.query("up == 1")) == len(FLEET), timeout_s=30
        ), central.log_tail()

        def bailing_paged() -> bool:
            return any(
                alert["labels"].get("alertname") in pages
                and alert["labels"].get("tenant_id") == BAILING
                and alert["state"] == "firing"
                for alert in central.alerts()
            )

        assert central.wait_for(bailing_paged, timeout_s=90, interval_s=1.0), central.alerts()

        # The recording rules on the central Prometheus separate the tenants: globex bails in
        # most runs, initech errs in many but bails no more than the ordinary tenants. (Polled:
        # the scaled windows hold few runs on a loaded machine, so one error among an ordinary
        # tenant's 20 runs reads 5 % at a single instant.)
        problems: list[tuple[str, str, dict[str, float]]] = []

        # (the rules, the tenant that must stand out above `floor`, the others below `ceiling`)
        checks = [
            (bail_ratios, BAILING, 0.3, (ERRORING, *ORDINARY), 0.1),
            (error_ratios, ERRORING, 0.15, (BAILING, *ORDINARY), 0.05),
        ]

        def separated() -> bool:
            problems.clear()
            for names, standing_out, floor, others, ceiling in checks:
                for name in names:
                    ratio = _by_tenant(central.query(name))
                    if ratio.get(standing_out, 0.0) <= floor:
                        problems.append((name, standing_out, ratio))
                    problems.extend(
                        (name, tenant, ratio)
                        for tenant in others
                        if ratio.get(tenant, 0.0) >= ceiling
                    )
            return not problems

        central.wait_for(separated, timeout_s=30, interval_s=1.0)
        assert problems == [], problems

        # Pages on silent bails: the bailing tenant, and only it.
        paged = {
            alert["labels"].get("tenant_id")
            for alert in central.alerts()
            if alert["labels"].get("alertname") in pages and alert["state"] in ("pending", "firing")
        }
        assert paged == {BAILING}, paged
        assert all(process.running() for process in processes)
