"""The Prometheus rule files and example configuration: promtool checks and structure.

``promtool`` missing is a failure when the ``CI`` environment variable is set, a skip otherwise.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped, unused-ignore]

from tests.prometheus_support import require_binary

ROOT = Path(__file__).resolve().parent.parent
PROM_DIR = ROOT / "dashboards" / "prometheus"
RULES = PROM_DIR / "symfonic-rules.yml"
RULE_TESTS = PROM_DIR / "symfonic-rules.test.yml"
CONFIG = PROM_DIR / "prometheus.yml"
COLLECTOR = ROOT / "dashboards" / "collector" / "otel-collector.yaml"
RUNBOOK = ROOT / "dashboards" / "README.md"
SEVERITIES = {"critical", "warning", "info"}

# DESIGN §3: the silent-bail rate per tenant.
SILENT_BAIL_RATE = (
    "sum by (tenant_id) (rate(symfonic_react_silent_bails_total[10m])) / "
    "sum by (tenant_id) (rate(symfonic_agent_runs_total[10m]))"
)


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    binary = require_binary("promtool")
    return subprocess.run(
        [binary, *args], cwd=PROM_DIR, capture_output=True, text=True, timeout=120, check=False
    )


def rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def alerts() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "alert" in rule]


def github_anchor(heading: str) -> str:
    slug = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return slug.replace(" ", "-")


# --- promtool --------------------------------------------------------------------------------


def test_promtool_check_rules() -> None:
    result = promtool("check", "rules", RULES.name)
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_test_rules() -> None:
    result = promtool("test", "rules", RULE_TESTS.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_promtool_check_config() -> None:
    result = promtool("check", "config", CONFIG.name)
    assert result.returncode == 0, result.stdout + result.stderr


# --- structure -------------------------------------------------------------------------------


def test_every_alert_has_severity_summary_description_and_runbook() -> None:
    anchors = {
        github_anchor(line.lstrip("#"))
        for line in RUNBOOK.read_text().splitlines()
        if line.startswith("#")
    }
    names = [alert["alert"] for alert in alerts()]
    assert len(names) == len(set(names))
    assert len(names) >= 8
    for alert in alerts():
        name = alert["alert"]
        assert alert["labels"]["severity"] in SEVERITIES, name
        annotations = alert["annotations"]
        assert annotations["summary"].strip() and annotations["description"].strip(), name
        url = annotations["runbook_url"]
        match = re.fullmatch(r"https://\S+/dashboards/README\.md#([\w-]+)", url)
        assert match, f"{name}: runbook_url {url!r}"
        assert match.group(1) == name.lower(), f"{name}: anchor {match.group(1)}"
        assert match.group(1) in anchors, f"{name}: no section {match.group(1)} in README.md"


def test_every_alert_is_unit_tested_both_ways() -> None:
    """Each alert has a promtool case where it fires and one where it must stay silent."""
    fires: set[str] = set()
    silent: set[str] = set()
    for group in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for case in group.get("alert_rule_test", []):
            (fires if case.get("exp_alerts") else silent).add(case["alertname"])
    names = {alert["alert"] for alert in alerts()}
    assert names - fires == set(), f"never shown firing: {names - fires}"
    assert names - silent == set(), f"never shown silent: {names - silent}"


def test_silent_bail_alert_is_the_design_rate_with_a_volume_guard() -> None:
    by_name = {rule.get("record") or rule.get("alert"): rule for rule in rules()}
    ratio = by_name["tenant_id:symfonic_react_silent_bail_ratio:rate10m"]
    assert " ".join(ratio["expr"].split()) == SILENT_BAIL_RATE
    alert = " ".join(by_name["SymfonicSilentBailRateHigh"]["expr"].split())
    assert "tenant_id:symfonic_react_silent_bail_ratio:rate10m >" in alert
    assert re.search(
        r"and on \(tenant_id\) tenant_id:symfonic_agent_runs:increase10m >= \d+", alert
    )
    guard = by_name["tenant_id:symfonic_agent_runs:increase10m"]
    assert " ".join(guard["expr"].split()) == (
        "sum by (tenant_id) (increase(symfonic_agent_runs_total[10m]))"
    )


def test_ratio_alerts_carry_the_volume_guard() -> None:
    for alert in alerts():
        expr = alert["expr"]
        if "tenant_id:" in expr and "_ratio:" in expr:
            assert "tenant_id:symfonic_agent_runs:increase10m >=" in expr, alert["alert"]


def test_scrape_config_references_the_rule_file_by_relative_path() -> None:
    config = yaml.safe_load(CONFIG.read_text())
    for rule_file in config["rule_files"]:
        assert not Path(rule_file).is_absolute(), rule_file
        assert (CONFIG.parent / rule_file).is_file(), rule_file
    assert config["scrape_configs"]


def test_collector_pipeline_is_consistent() -> None:
    config = yaml.safe_load(COLLECTOR.read_text())
    pipelines = config["service"]["pipelines"]
    assert {"metrics", "traces"} <= set(pipelines)
    assert "otlp" in config["receivers"]
    assert {"prometheus", "prometheusremotewrite"} <= set(pipelines["metrics"]["exporters"])
    for pipeline in pipelines.values():
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind, []):
                assert component in config[kind], f"{kind} {component} is not defined"
