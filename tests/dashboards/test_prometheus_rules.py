"""The Prometheus rules, their promtool tests, and the example Prometheus / Alertmanager configs.

``promtool`` or ``amtool`` missing is a failure when the ``CI`` environment variable is set, a
skip otherwise.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from tests.support.prometheus_support import require_binary

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = ROOT / "dashboards"
PROM_DIR = DASHBOARDS / "prometheus"
RULES = PROM_DIR / "symfonic-rules.yml"
RULE_TESTS = PROM_DIR / "symfonic-rules.test.yml"
# The documented variant of the page: pages on unrecovered bails only, loaded beside RULES.
VARIANT = PROM_DIR / "symfonic-rules-unrecovered-page.yml"
VARIANT_TESTS = PROM_DIR / "symfonic-rules-unrecovered-page.test.yml"
CONFIG = PROM_DIR / "prometheus.yml"
AGENT_CONFIG = PROM_DIR / "prometheus-agent.yml"
CENTRAL_CONFIG = PROM_DIR / "prometheus-central.yml"
COLLECTOR_CONFIG = PROM_DIR / "prometheus-collector.yml"
ALERTMANAGER = DASHBOARDS / "alertmanager" / "alertmanager.yml"
COLLECTOR = DASHBOARDS / "collector" / "otel-collector.yaml"
DOCS = ROOT / "docs"
RUNBOOKS = DOCS / "runbooks"  # one page per alert, named after it
SLO_PAGE = DOCS / "operators" / "slo.md"
THRESHOLDS_PAGE = DOCS / "operators" / "prometheus.md"
SEVERITIES = {"critical", "warning", "info"}
RUNBOOK_URL = "{{ with $externalLabels.runbook_base_url }}{{ . }}/{{ end }}runbooks/"
SLO_BUDGET = "symfonic:silent_bail_budget:ratio"

# DESIGN §3: the silent-bail rate per tenant.
SILENT_BAIL_RATE = (
    "sum by (tenant_id) (rate(symfonic_react_silent_bails_total[10m])) / "
    "sum by (tenant_id) (rate(symfonic_agent_runs_total[10m]))"
)


def run(binary: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [require_binary(binary), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def promtool(*args: str, cwd: Path = PROM_DIR) -> subprocess.CompletedProcess[str]:
    return run("promtool", *args, cwd=cwd)


def rules() -> list[dict[str, Any]]:
    groups = [g for f in (RULES, VARIANT) for g in yaml.safe_load(f.read_text())["groups"]]
    return [rule for group in groups for rule in group["rules"]]


def alerts() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "alert" in rule]


def records() -> dict[str, str]:
    return {rule["record"]: rule["expr"] for rule in rules() if "record" in rule}


def rule_test_groups() -> list[dict[str, Any]]:
    return [g for f in (RULE_TESTS, VARIANT_TESTS) for g in yaml.safe_load(f.read_text())["tests"]]


def flat(expr: str) -> str:
    return " ".join(expr.split())


def seconds(duration: str) -> int:
    """A Prometheus duration (``90m``, ``6h25m``, ``2m``) in seconds."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    parts = re.findall(r"(\d+)([smhdw])", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    return sum(int(n) * units[u] for n, u in parts)


# --- promtool and amtool --------------------------------------------------------------------


@pytest.mark.parametrize("rules_file", [RULES, VARIANT], ids=lambda p: p.name)
def test_promtool_check_rules(rules_file: Path) -> None:
    result = promtool("check", "rules", rules_file.name)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("tests_file", [RULE_TESTS, VARIANT_TESTS], ids=lambda p: p.name)
def test_promtool_test_rules(tests_file: Path) -> None:
    result = promtool("test", "rules", tests_file.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def _cases(path: Path, alertname: str) -> set[tuple[str, str, str]]:
    """(input series, eval time, expected alerts) of each of a file's cases of one alert."""
    found = set()
    for group in yaml.safe_load(path.read_text())["tests"]:
        series = repr(sorted((s["series"], s["values"]) for s in group["input_series"]))
        for case in group.get("alert_rule_test", []):
            if case["alertname"] == alertname:
                fired = repr(sorted(a["exp_labels"]["tenant_id"] for a in case["exp_alerts"]))
                found.add((series, case["eval_time"], fired))
    return found


def test_the_unrecovered_variant_has_every_case_of_the_page() -> None:
    """Every quiet (and firing) case of the page, on the same series without a fallback, is a case
    of the variant with the same result; and one case shows a recovered tenant it leaves quiet."""
    page = _cases(RULE_TESTS, "SymfonicSilentBailBudgetBurn")
    variant = _cases(VARIANT_TESTS, "SymfonicUnrecoveredBailBudgetBurn")
    assert any(fired == "[]" for _, _, fired in page)
    assert page <= variant
    extra = variant - page
    assert extra and all("recovered" not in fired for _, _, fired in extra)
    assert any('symfonic_synthesis_recovered="true"' in series for series, _, _ in extra)


@pytest.mark.parametrize("config", [CONFIG, CENTRAL_CONFIG, COLLECTOR_CONFIG], ids=lambda p: p.name)
def test_promtool_check_config(config: Path) -> None:
    result = promtool("check", "config", config.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "symfonic-rules.yml" in result.stdout  # the rule file was found and checked


def test_agent_config_is_valid_in_agent_mode_only() -> None:
    result = promtool("check", "config", "--agent", AGENT_CONFIG.name)
    assert result.returncode == 0, result.stdout + result.stderr
    # The agent check is strict: a server config (rules, alerting) does not pass it.
    server = promtool("check", "config", "--agent", CONFIG.name)
    assert server.returncode != 0 and "not allowed in agent mode" in server.stdout + server.stderr


def test_amtool_check_alertmanager_config() -> None:
    result = run("amtool", "check-config", ALERTMANAGER.name, cwd=ALERTMANAGER.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_alertmanager_routes_tenant_alerts_by_tenant_and_the_rest_by_name() -> None:
    def route(*labels: str) -> str:
        result = run(
            "amtool",
            "config",
            "routes",
            "test",
            f"--config.file={ALERTMANAGER.name}",
            "--tree",
            *labels,
            cwd=ALERTMANAGER.parent,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    tenant = route("alertname=SymfonicSilentBailBudgetBurn", "tenant_id=acme", "severity=critical")
    assert "default-route" in tenant and 'tenant_id=""' not in tenant  # grouped by tenant_id
    assert "symfonic-tickets" not in tenant  # the page goes to the on-call
    # The same tenant's ticket: its own route (and group), the ticket receiver.
    ticket = route(
        "alertname=SymfonicSilentBailBudgetSlowBurn", "tenant_id=acme", "severity=warning"
    )
    assert '{severity!="critical"}  receiver: symfonic-tickets' in ticket
    fleet_wide = route("alertname=SymfonicOrphanedRuns", "gen_ai_agent_name=symfonic")
    assert '{tenant_id=""}  receiver: symfonic-oncall' in fleet_wide  # grouped by alert name


def test_each_lost_by_tenant_id_fails_the_rule_tests(tmp_path: Path) -> None:
    """Mutation check: drop ``tenant_id`` from any ``by (...)`` of any recording rule, and the
    promtool tests of that rule fail (a per-tenant rule that aggregates tenants together)."""
    text = RULES.read_text()
    groups = rule_test_groups()
    (tmp_path / RULES.name).write_text("")
    mutants = list(re.finditer(r"by \(tenant_id(, )?", text))
    assert len(mutants) >= 20
    survived = []
    for match in mutants:
        record = re.findall(r"- record: (\S+)", text[: match.start()])[-1]
        tests = [
            group
            for group in groups
            if any(record in case["expr"] for case in group.get("promql_expr_test", []))
        ]
        assert tests, f"{record}: no promql_expr_test reads it"
        (tmp_path / RULES.name).write_text(text[: match.start()] + "by (" + text[match.end() :])
        suite = {**yaml.safe_load(RULE_TESTS.read_text()), "tests": tests}
        (tmp_path / "mutant.test.yml").write_text(yaml.safe_dump(suite, sort_keys=False))
        result = promtool("test", "rules", "mutant.test.yml", cwd=tmp_path)
        if result.returncode == 0:
            survived.append(f"{record} (offset {match.start()})")
    assert survived == [], f"losing `by (tenant_id)` goes unnoticed in: {survived}"


# --- the rules --------------------------------------------------------------------------------


def test_every_alert_has_severity_summary_description_and_runbook() -> None:
    names = [alert["alert"] for alert in alerts()]
    assert len(names) == len(set(names))
    assert len(names) >= 12
    for alert in alerts():
        name = alert["alert"]
        assert alert["labels"]["severity"] in SEVERITIES, name
        annotations = alert["annotations"]
        assert annotations["summary"].strip() and annotations["description"].strip(), name
        # No host baked in: the docs site's page, under the operator's runbook_base_url.
        assert annotations["runbook_url"] == RUNBOOK_URL + name + "/", name
        page = RUNBOOKS / f"{name}.md"
        assert page.is_file(), f"{name}: no page docs/runbooks/{name}.md"
        assert page.read_text().splitlines()[0] == f"# {name}", name


def test_every_runbook_page_is_an_alert_and_in_the_site() -> None:
    """No page outlives its alert, and the site's navigation and index list every page."""
    names = {alert["alert"] for alert in alerts()}
    pages = {page.stem for page in RUNBOOKS.glob("*.md")} - {"index"}
    assert pages == names
    nav = (ROOT / "mkdocs.yml").read_text()
    index = (RUNBOOKS / "index.md").read_text()
    for name in names:
        assert f"runbooks/{name}.md" in nav, name
        assert f"[{name}]({name}.md)" in index, name


def test_every_alert_is_unit_tested_both_ways() -> None:
    """Each alert has a promtool case where it fires and one where it must stay silent."""
    fires: set[str] = set()
    silent: set[str] = set()
    for group in rule_test_groups():
        for case in group.get("alert_rule_test", []):
            (fires if case.get("exp_alerts") else silent).add(case["alertname"])
    names = {alert["alert"] for alert in alerts()}
    assert names - fires == set(), f"never shown firing: {names - fires}"
    assert names - silent == set(), f"never shown silent: {names - silent}"


def _identities(group: dict[str, Any], keys: list[str]) -> set[tuple[str, ...]]:
    found = set()
    for series in group["input_series"]:
        labels = dict(re.findall(r'(\w+)="([^"]*)"', series["series"]))
        if all(key in labels for key in keys):
            found.add(tuple(labels[key] for key in keys))
    return found


def test_every_alert_has_a_quiet_case_after_its_for_has_elapsed() -> None:
    """A series the alert reads stays silent at a time when the alert fires for another one,
    evaluated after ``for:`` plus a 10-minute window: the threshold held it back, not ``for:``."""
    groups = rule_test_groups()
    for alert in alerts():
        name = alert["alert"]
        after = seconds(alert.get("for", "0s")) + 600
        cases = [
            (group, case)
            for group in groups
            for case in group.get("alert_rule_test", [])
            if case["alertname"] == name
        ]
        firing = [case for _, case in cases if case["exp_alerts"]]
        keys = sorted(set(firing[0]["exp_alerts"][0]["exp_labels"]) - {"severity"})
        proven = False
        for group, case in cases:
            if not case["exp_alerts"] or seconds(case["eval_time"]) < after:
                continue
            fired = {tuple(a["exp_labels"][k] for k in keys) for a in case["exp_alerts"]}
            proven |= bool(_identities(group, keys) - fired)
        assert proven, f"{name}: no silent series evaluated after `for:` next to a firing one"


def test_every_recording_rule_has_an_expression_test() -> None:
    tested = " ".join(
        case["expr"] for group in rule_test_groups() for case in group.get("promql_expr_test", [])
    )
    untested = [name for name in records() if not re.search(rf"{re.escape(name)}\b", tested)]
    assert untested == []


def test_alerts_read_recorded_series_that_exist() -> None:
    recorded = set(records())
    for alert in alerts():
        used = set(re.findall(r"\b[a-z_]+:[a-z0-9_]+:[a-z0-9_]+\b", alert["expr"]))
        assert used <= recorded, f"{alert['alert']} reads unrecorded {used - recorded}"


def test_silent_bail_ratio_is_the_design_rate() -> None:
    ratio = records()["tenant_id:symfonic_react_silent_bail_ratio:rate10m"]
    assert flat(ratio) == SILENT_BAIL_RATE


def test_ratio_alerts_carry_a_volume_guard() -> None:
    guard = re.compile(r"and on \(tenant_id\) tenant_id:\w+:increase\w+ >= \d+")
    for alert in alerts():
        expr = flat(alert["expr"])
        ratios = len(re.findall(r"tenant_id:\w+_ratio:rate\w+ ", expr))
        if ratios:
            # one guard per `or` branch of a multi-window alert
            branches = expr.count(" or ") + 1
            assert len(guard.findall(expr)) == branches, alert["alert"]


def test_slo_objective_is_one_number_stated_in_the_runbook() -> None:
    budget = records()[SLO_BUDGET]
    match = re.fullmatch(r"vector\((0\.\d+)\)", budget.strip())
    assert match, budget
    objective = float(match.group(1))
    slo_alerts = [a for a in alerts() if "silent_bail_ratio" in a["expr"]]
    assert {a["alert"] for a in slo_alerts} == {
        "SymfonicSilentBailBudgetBurn",
        "SymfonicSilentBailBudgetSlowBurn",
    }
    for alert in slo_alerts:
        expr = flat(alert["expr"])
        windows = re.findall(r"silent_bail_ratio:rate\w+", expr)
        assert expr.count(f"/ on () group_left () {SLO_BUDGET} >") == len(windows) >= 2
    # The SLO page states the same objective.
    stated = re.search(r"at most (\d+(?:\.\d+)?) % of (?:its )?runs", SLO_PAGE.read_text())
    assert stated and float(stated.group(1)) == pytest.approx(100 * objective)


def test_runbook_threshold_table_lists_every_alert() -> None:
    table = [line for line in THRESHOLDS_PAGE.read_text().splitlines() if line.startswith("| [")]
    listed = {m.group(1) for line in table if (m := re.match(r"\| \[(\w+)\]", line))}
    assert listed == {alert["alert"] for alert in alerts()}


# --- the example configurations ----------------------------------------------------------------


@pytest.mark.parametrize("config", [CONFIG, CENTRAL_CONFIG, COLLECTOR_CONFIG], ids=lambda p: p.name)
def test_server_configs_load_the_rules_by_relative_path_and_alert(config: Path) -> None:
    parsed = yaml.safe_load(config.read_text())
    assert parsed["rule_files"] == ["symfonic-rules.yml"]
    for rule_file in parsed["rule_files"]:
        assert (config.parent / rule_file).is_file(), rule_file
    targets = parsed["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]
    assert targets and all(target.endswith(":9093") for target in targets)


def _targets(config: Path) -> list[str]:
    parsed = yaml.safe_load(config.read_text())
    return [
        target
        for job in parsed["scrape_configs"]
        for static in job.get("static_configs", [])
        for target in static["targets"]
    ]


def test_the_local_config_scrapes_only_what_runs_on_this_host() -> None:
    """A fresh local Prometheus shows no target that is down by construction."""
    targets = _targets(CONFIG)
    assert targets == ["127.0.0.1:9464"]  # the agent's (and the demo's) documented port


def test_the_collector_config_scrapes_the_collectors_prometheus_exporter() -> None:
    collector = yaml.safe_load(COLLECTOR.read_text())
    port = collector["exporters"]["prometheus"]["endpoint"].rsplit(":", 1)[1]
    parsed = yaml.safe_load(COLLECTOR_CONFIG.read_text())
    (job,) = parsed["scrape_configs"]
    assert job["honor_labels"] is True  # workers stay distinct series
    assert [target.rsplit(":", 1)[1] for target in _targets(COLLECTOR_CONFIG)] == [port]


def test_agent_config_scrapes_and_remote_writes_to_the_central_server() -> None:
    agent = yaml.safe_load(AGENT_CONFIG.read_text())
    assert "rule_files" not in agent and "alerting" not in agent
    assert agent["scrape_configs"][0]["static_configs"][0]["targets"]
    assert agent["global"]["external_labels"]["agent_host"]  # unique per host
    assert agent["remote_write"][0]["url"].endswith("/api/v1/write")
    # the central server receives it: the flag is named where it is started
    assert "--web.enable-remote-write-receiver" in CENTRAL_CONFIG.read_text()
    assert yaml.safe_load(CENTRAL_CONFIG.read_text())["rule_files"]


def test_alertmanager_groups_by_tenant_and_inhibits_the_ticket_under_the_page() -> None:
    config = yaml.safe_load(ALERTMANAGER.read_text())
    route = config["route"]
    assert route["group_by"] == ["tenant_id"]
    receivers = {receiver["name"]: receiver for receiver in config["receivers"]}
    webhook = receivers[route["receiver"]]["webhook_configs"][0]
    assert webhook["url"].startswith("http") and webhook["send_resolved"] is True
    names = {alert["alert"] for alert in alerts()}
    for rule in config["inhibit_rules"]:
        assert rule["equal"] == ["tenant_id"]
        for matcher in rule["source_matchers"] + rule["target_matchers"]:
            assert re.fullmatch(r'alertname="(\w+)"', matcher).group(1) in names  # type: ignore[union-attr]


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
