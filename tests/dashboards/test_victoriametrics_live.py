"""The shipped rules and dashboards on VictoriaMetrics, live: vmagent, victoria-metrics, vmalert.

Two ``symfonic-otel demo`` processes (globex noisy in both, telemetry faults on) serve /metrics;
``vmagent`` scrapes them with the exported ``victoriametrics/vmagent.yml`` (targets and interval
set by the test) and remote-writes to a single-node ``victoria-metrics``; ``vmalert``, set up
by the exported ``victoriametrics/vmalert.env``, evaluates the shipped rules (windows and
``for:`` divided by ``FACTOR``, as in the Prometheus fleet test) against it, writes the records
back and notifies a real Alertmanager running the shipped route, whose receivers post to a
webhook of this test.

The on-call gets the silent-bail page for globex and for no other tenant, and every panel query
of every dashboard returns data from VictoriaMetrics. The time to the page is printed: the
operator guide's figure for the cost of records that read records there (VictoriaMetrics is run
with ``-search.latencyOffset`` at the scrape interval, as the guide says).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from symfonic_otel import dashboards
from tests.support.alertmanager_support import paging_alertmanager
from tests.support.dashboard_queries import dashboard_queries
from tests.support.fleet_support import (
    DASHBOARDS,
    RULES,
    DemoProcess,
    shortened_rules,
    silent_bail_pages,
)
from tests.support.prometheus_support import require_binary
from tests.support.victoria_support import (
    VictoriaMetricsServer,
    VmagentServer,
    VmalertServer,
    read_env,
    vm_binary,
)

FACTOR = 30  # as in the Prometheus fleet test: 1h windows -> 2 min, `for: 2m` -> 4 s
DEMO_RATE = 10  # runs per second per process
NOISY = "globex"
FLEET = (  # (tenants, noisy) per process
    ("acme,globex,initech", "globex=silent_bail"),
    ("globex,umbrella,hooli", "globex=silent_bail"),
)
ORDINARY = frozenset({"acme", "initech", "umbrella", "hooli"})

pytestmark = pytest.mark.timeout(300)


def scrape_config(targets: list[str]) -> dict[str, Any]:
    """The exported vmagent.yml, scraping ``targets`` every second."""
    config: dict[str, Any] = yaml.safe_load(
        (DASHBOARDS / "victoriametrics/vmagent.yml").read_text()
    )
    config["global"]["scrape_interval"] = "1s"
    (job,) = config["scrape_configs"]
    job["static_configs"] = [{"targets": targets}]
    return config


def paged_tenants(notifications: list[dict[str, Any]], pages: set[str]) -> set[str]:
    return {
        alert["labels"].get("tenant_id", "")
        for note in notifications
        for alert in note["alerts"]
        if alert["status"] == "firing" and alert["labels"].get("alertname") in pages
    }


def test_vmagent_victoria_metrics_and_vmalert_page_the_noisy_tenant_and_serve_every_panel(
    tmp_path: Path,
) -> None:
    for name in ("victoria-metrics", "vmagent", "vmalert"):
        vm_binary(name)
    require_binary("prometheus-alertmanager", package="prometheus-alertmanager")
    pages = set(silent_bail_pages(yaml.safe_load(RULES.read_text())))
    assert pages, "no alert pages on the silent-bail rate"
    rules = tmp_path / "symfonic-rules.vm.yml"
    rules.write_text(shortened_rules(RULES.read_text(), factor=FACTOR))
    environment = read_env(DASHBOARDS / "victoriametrics/vmalert.env")
    assert {"datasource_url", "remoteWrite_url", "notifier_url"} <= set(environment)
    queries = dashboard_queries()
    assert len(queries) > 30

    demos = [
        DemoProcess(
            tmp_path / f"demo-{index}",
            duration_s=240.0,
            rate=DEMO_RATE,
            tenants=tenants,
            noisy=noisy,
            seed=300 + index,
            faults=True,  # the orphaned-run and dropped-event panels need those faults
        )
        for index, (tenants, noisy) in enumerate(FLEET)
    ]
    with (
        paging_alertmanager(tmp_path / "alertmanager", factor=FACTOR) as (hook, alertmanager),
        demos[0],
        demos[1],
        # As the operator guide says: -search.latencyOffset at the scrape interval (1 s here),
        # or every level of records waits its default 30 s before the next level sees it.
        VictoriaMetricsServer(tmp_path / "vm", extra_args=["-search.latencyOffset=1s"]) as vm,
        VmagentServer(
            tmp_path / "vmagent", scrape_config([d.target for d in demos]), vm.write_url
        ) as agent,
        VmalertServer(
            tmp_path / "vmalert",
            [rules],
            vm.url,
            alertmanager.url,
            environment=environment,
            flags={"evaluationInterval": "1s"},
        ) as vmalert,
    ):
        started = time.monotonic()
        assert vm.wait_for(lambda: len(vm.query("up == 1")) == 2, timeout_s=60), (
            agent.log_tail(),
            vm.log_tail(),
        )
        loaded = {rule["name"] for group in vmalert.rules() for rule in group["rules"]}
        assert loaded >= pages, sorted(pages - loaded)

        def noisy_paged() -> bool:
            return NOISY in paged_tenants(hook.notifications(), pages)

        assert vm.wait_for(noisy_paged, timeout_s=150, interval_s=1.0), (
            f"no page for {NOISY}; vmalert alerts: {vmalert.alerts()};"
            f" vmalert log: {vmalert.log_tail()}"
        )
        paged_at = time.monotonic() - started

        # Every panel query returns data (retried while counters and records accumulate).
        missing = dict.fromkeys(queries, True)

        def all_answered() -> bool:
            for key in [key for key, empty in missing.items() if empty]:
                if vm.query(key[2]):
                    missing[key] = False
            return not any(missing.values())

        vm.wait_for(all_answered, timeout_s=60, interval_s=2.0)
        empty = [f"{board} / {title}: {expr}" for (board, title, expr), e in missing.items() if e]
        assert not empty, "panel queries without data on VictoriaMetrics:\n" + "\n".join(empty)
        assert all(demo.running() for demo in demos), [d.stderr()[-1000:] for d in demos]

        # No other tenant paged, at vmalert or at the webhook.
        firing = {
            alert["labels"].get("tenant_id", "")
            for alert in vmalert.alerts()
            if alert["labels"].get("alertname") in pages
        }
        paged = paged_tenants(hook.notifications(), pages)
        assert paged == {NOISY} and firing <= {NOISY}, (paged, firing)
        assert not ORDINARY & paged

    print(f"VictoriaMetrics: the {NOISY} page reached the webhook {paged_at:.0f} s after start")


def _dry_run(
    *argv: str, environment: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    variables = [f"{name}={value}" for name, value in (environment or {}).items()]
    return subprocess.run(
        ["env", *variables, *argv, "-loggerLevel=ERROR"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_exported_vmagent_and_vmalert_files_pass_their_own_checks(tmp_path: Path) -> None:
    """Each binary's dry run on the exported files: the scrape config, and every rule file
    with the flags of vmalert.env (vmalert validates the rules and their templates)."""
    vmagent, vmalert = vm_binary("vmagent"), vm_binary("vmalert")
    out = tmp_path / "export"
    dashboards.export(out)
    scrape = out / "victoriametrics/vmagent.yml"
    checked = _dry_run(vmagent, f"-promscrape.config={scrape}", "-promscrape.config.dryRun")
    assert checked.returncode == 0, checked.stderr
    rule_files = [
        f"-rule={path}"
        for path in sorted((out / "prometheus").glob("symfonic-rules*.yml"))
        if not path.name.endswith(".test.yml")
    ]
    assert len(rule_files) >= 2
    environment = read_env(out / "victoriametrics/vmalert.env")
    checked = _dry_run(vmalert, "-envflag.enable", *rule_files, "-dryRun", environment=environment)
    assert checked.returncode == 0, checked.stderr
    # A broken variable in the env file is an error, so the file is really read.
    broken = {**environment, "evaluationInterval": "soon"}
    checked = _dry_run(vmalert, "-envflag.enable", rule_files[0], "-dryRun", environment=broken)
    assert "evaluationInterval" in checked.stderr
