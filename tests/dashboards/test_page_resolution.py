"""How long the silent-bail page lasts after the bails stop, as stated and as promtool proves it.

The page (``SymfonicSilentBailBudgetBurn``) is two window pairs; each resolves once its short
window's bail share is back under its threshold, so at the latest one short window after the last
bail. The runbook and the operator guide state that figure per pair; the promtool group
``how long the page lasts`` (``symfonic-rules.test.yml``) has a tenant held by each pair that
still fires just before the stated time (after the 5m window is clean, for the 6h/30m pair) and
is resolved by it. This test reads the figures from all three places and checks they agree.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped, unused-ignore]

ROOT = Path(__file__).resolve().parents[2]
PROM = ROOT / "dashboards" / "prometheus"
RULE_FILES = (PROM / "symfonic-rules.yml", PROM / "symfonic-rules-unrecovered-page.yml")
RULE_TESTS = PROM / "symfonic-rules.test.yml"
RUNBOOK = ROOT / "docs" / "runbooks" / "SymfonicSilentBailBudgetBurn.md"
SLOW_RUNBOOK = ROOT / "docs" / "runbooks" / "SymfonicSilentBailBudgetSlowBurn.md"
GUIDE = ROOT / "docs" / "operators" / "slo.md"
PAGE = "SymfonicSilentBailBudgetBurn"
GROUP = "silent-bail SLO: how long the page lasts after the bails stop"
DASHBOARD = "{{ with $externalLabels.grafana_url }}{{ . }}/{{ end }}d/symfonic-agent-overview/"
TENANT_VAR = "?var-tenant={{ $labels.tenant_id | urlquery }}"


def _minutes(duration: str) -> int:
    units = {"m": 1, "h": 60, "d": 1440}
    return sum(int(n) * units[u] for n, u in re.findall(r"(\d+)([mhd])", duration))


def _alerts() -> list[dict[str, Any]]:
    return [
        rule
        for path in RULE_FILES
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    ]


def _pairs() -> list[tuple[int, int, float]]:
    """(long window, short window, burn threshold) of each pair of the page, in minutes."""
    (page,) = [rule for rule in _alerts() if rule["alert"] == PAGE]
    found = re.findall(
        r"silent_bail_ratio:rate(\w+) / on \(\) group_left \(\) \S+ > ([\d.]+)"
        r"\s+and on \(tenant_id\)\s+"
        r"\S+silent_bail_ratio:rate(\w+) / on \(\) group_left \(\) \S+ > ([\d.]+)",
        page["expr"],
    )
    assert len(found) == 2, page["expr"]
    pairs = []
    for long, threshold, short, short_threshold in found:
        assert threshold == short_threshold
        pairs.append((_minutes(long), _minutes(short), float(threshold)))
    return sorted(pairs, key=lambda pair: pair[1])


def _expand(values: str) -> list[float]:
    """promtool's expanding notation, the forms the group uses (``a+bxn``, numbers)."""
    out: list[float] = []
    for token in values.split():
        match = re.fullmatch(r"(-?[\d.]+)([+-][\d.]+)x(\d+)", token)
        if match:
            start, step, count = float(match[1]), float(match[2]), int(match[3])
            out.extend(start + step * i for i in range(count + 1))
        else:
            out.append(float(token))
    return out


def test_every_alert_links_the_overview_dashboard_for_its_tenant() -> None:
    alerts = _alerts()
    assert len(alerts) >= 13
    for rule in alerts:
        url = rule["annotations"]["dashboard_url"]
        assert url.startswith(DASHBOARD), rule["alert"]
        per_tenant = "$labels.tenant_id" in rule["annotations"]["summary"]
        assert url.endswith(TENANT_VAR) == per_tenant, rule["alert"]


def test_the_promtool_case_proves_each_pairs_stated_resolution_time() -> None:
    pairs = _pairs()
    assert [(long, short) for long, short, _ in pairs] == [(60, 5), (360, 30)]
    tests = yaml.safe_load(RULE_TESTS.read_text())
    assert tests["evaluation_interval"] == "1m"
    (group,) = [g for g in tests["tests"] if g["name"] == GROUP]
    last_bail: dict[str, int] = {}
    for series in group["input_series"]:
        if series["series"].startswith("symfonic_react_silent_bails_total"):
            tenant = re.search(r'tenant_id="([^"]+)"', series["series"])[1]  # type: ignore[index]
            values = _expand(series["values"])
            last_bail[tenant] = max(i for i in range(1, len(values)) if values[i] > values[i - 1])
    firing: dict[str, list[int]] = {tenant: [] for tenant in last_bail}
    quiet: list[int] = []
    for case in group["alert_rule_test"]:
        assert case["alertname"] == PAGE
        at = _minutes(case["eval_time"])
        for alert in case["exp_alerts"]:
            firing[alert["exp_labels"]["tenant_id"]].append(at)
        if not case["exp_alerts"]:
            quiet.append(at)
    held_by = {}
    for tenant, bail in last_bail.items():
        last_firing = max(firing[tenant])
        resolved = min(at for at in quiet if at > last_firing)
        # Each tenant is held by one pair: it still fires within 2 minutes of that pair's short
        # window after the last bail, and is resolved by the short window's end.
        (short,) = [s for _, s, _ in pairs if s - 2 <= last_firing - bail < s]
        assert resolved - bail <= short, tenant
        held_by[short] = tenant
        if short > 5:  # not before the short window clears: the 5m window was clean long before
            assert any(bail + 5 <= at < resolved for at in firing[tenant]), tenant
    assert set(held_by) == {short for _, short, _ in pairs}


def test_the_runbooks_and_the_guide_state_the_figures() -> None:
    shorts = [short for _, short, _ in _pairs()]
    for page in (RUNBOOK, SLOW_RUNBOOK, GUIDE):
        text = page.read_text()
        section = text[text.index("## How long the page lasts") :]
        for short in shorts:
            assert f"{short} minutes" in section, (page.name, short)
        assert "group_interval" in section, page.name  # the resolved notification's delay
    # The ticket's own figure: its short window (6h) after the last bail, at most.
    slow = SLOW_RUNBOOK.read_text()
    assert "6 hours" in slow[slow.index("## How long the page lasts") :]
