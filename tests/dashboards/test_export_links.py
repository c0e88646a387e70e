"""``dashboards export`` with and without base URLs: absolute links, or a loud warning.

With ``--runbook-base-url`` and ``--grafana-url`` the exported Prometheus server configs carry
both as external labels, and the exported rules, evaluated by promtool with those labels, give
every alert an absolute ``runbook_url`` and a ``dashboard_url`` that opens the overview
dashboard for the alert's tenant. Without them the links are relative and the export says so
on stderr, naming the flag. ``--traces jaeger`` provisions Jaeger as the trace data source.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped, unused-ignore]
import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from symfonic_otel import dashboards
from symfonic_otel.cli import main
from tests.support.prometheus_support import require_binary

ROOT = Path(__file__).resolve().parents[2]
RULE_TESTS = ROOT / "dashboards" / "prometheus" / "symfonic-rules.test.yml"
SERVER_CONFIGS = (
    "prometheus/prometheus.yml",
    "prometheus/prometheus-collector.yml",
    "prometheus/prometheus-central.yml",
)
RUNBOOKS = "https://git.example.com/ops/monitoring/-/tree/main/ops"
GRAFANA = "https://grafana.example.com/grafana"
LINKS_GROUP = "runbook links follow the runbook_base_url external label"
DASHBOARD = "d/symfonic-agent-overview/symfonic-agent-overview"


def _export(tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[Path, str]:
    out = tmp_path / "ops"
    assert main(["dashboards", "export", str(out), *flags]) == 0
    return out, capsys.readouterr().err


def _external_labels(path: Path) -> dict[str, str]:
    config: dict[str, Any] = yaml.safe_load(path.read_text())
    labels: dict[str, str] = (config.get("global") or {}).get("external_labels") or {}
    return labels


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "WARNING" in line]


def test_with_base_urls_every_link_is_absolute_and_nothing_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, stderr = _export(
        tmp_path, capsys, "--runbook-base-url", RUNBOOKS + "/", "--grafana-url", GRAFANA
    )
    assert _warnings(stderr) == []
    assert f"--config.file={out}/prometheus/prometheus.yml" in stderr
    assert "--enable-feature=exemplar-storage" in stderr
    for name in SERVER_CONFIGS:
        # the trailing slash is dropped: runbook_url adds its own
        assert _external_labels(out / name) == {
            "runbook_base_url": RUNBOOKS,
            "grafana_url": GRAFANA,
        }
    # Only the server configs changed; the agent's own labels are untouched.
    assert "runbook_base_url" not in str(_external_labels(out / "prometheus/prometheus-agent.yml"))
    fresh = tmp_path / "fresh"
    dashboards.export(fresh)
    changed = sorted(
        p.relative_to(out).as_posix()
        for p in out.rglob("*")
        if p.is_file() and p.read_bytes() != (fresh / p.relative_to(out)).read_bytes()
    )
    assert changed == sorted(SERVER_CONFIGS)


def test_the_exported_rules_under_the_exported_labels_give_absolute_links(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """promtool evaluates the exported rules with the exported config's external labels."""
    out, _ = _export(tmp_path, capsys, "--runbook-base-url", RUNBOOKS, "--grafana-url", GRAFANA)
    labels = _external_labels(out / "prometheus/prometheus.yml")
    tests = yaml.safe_load(RULE_TESTS.read_text())
    (group,) = [g for g in tests["tests"] if g["name"] == LINKS_GROUP]
    group["external_labels"] = labels
    (case,) = group["alert_rule_test"]
    (alert,) = case["exp_alerts"]
    tenant = alert["exp_labels"]["tenant_id"]
    alert["exp_annotations"]["runbook_url"] = f"{RUNBOOKS}/runbooks/{case['alertname']}/"
    alert["exp_annotations"]["dashboard_url"] = f"{GRAFANA}/{DASHBOARD}?var-tenant={tenant}"
    tests["tests"] = [group]
    test_file = out / "prometheus" / "links.test.yml"
    test_file.write_text(yaml.safe_dump(tests, sort_keys=False))
    for name in SERVER_CONFIGS[:1]:
        check = subprocess.run(
            [require_binary("promtool"), "check", "config", Path(name).name],
            cwd=out / "prometheus",
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert check.returncode == 0, check.stdout + check.stderr
    result = subprocess.run(
        [require_binary("promtool"), "test", "rules", test_file.name],
        cwd=out / "prometheus",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0 and "SUCCESS" in result.stdout, result.stdout + result.stderr


def test_without_base_urls_the_export_warns_naming_each_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, stderr = _export(tmp_path, capsys)
    runbooks, grafana = _warnings(stderr)
    assert runbooks.startswith("symfonic-otel dashboards export: WARNING: no --runbook-base-url")
    assert "runbooks/<alert>/" in runbooks
    assert grafana.startswith("symfonic-otel dashboards export: WARNING: no --grafana-url")
    assert "var-tenant=" in grafana
    for name in SERVER_CONFIGS:
        assert _external_labels(out / name) == {}  # the links stay relative
    # One flag given: only the other one is named.
    _, stderr = _export(tmp_path / "half", capsys, "--grafana-url", GRAFANA)
    (only,) = _warnings(stderr)
    assert "--runbook-base-url" in only and "--grafana-url" not in only


@pytest.mark.parametrize(
    "url", ["grafana.example.com", "ftp://grafana.example.com", "https://g.example.com/?a=1", ""]
)
def test_a_url_that_is_no_base_url_is_refused_naming_the_flag(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["dashboards", "export", str(tmp_path / "out"), "--grafana-url", url])
    assert exit_info.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--grafana-url" in line and "absolute http(s) URL" in line
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="runbook_base_url"):
        dashboards.export(tmp_path / "api", runbook_base_url=url)


def test_traces_jaeger_provisions_jaeger_under_the_same_uid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = "grafana/provisioning/datasources/symfonic-traces.yaml"
    tempo_out, _ = _export(tmp_path / "tempo", capsys)
    jaeger_out, _ = _export(tmp_path / "jaeger", capsys, "--traces", "jaeger")
    (tempo,) = yaml.safe_load((tempo_out / source).read_text())["datasources"]
    (jaeger,) = yaml.safe_load((jaeger_out / source).read_text())["datasources"]
    assert (tempo["type"], jaeger["type"]) == ("tempo", "jaeger")
    assert tempo["uid"] == jaeger["uid"]
    # Every exported data source file is one Grafana's provisioning reads as meant.
    schema = json.loads(
        (Path(__file__).parent / "grafana/datasource-provisioning.schema.json").read_text()
    )
    validator = jsonschema.Draft7Validator(schema)
    for out in (tempo_out, jaeger_out):
        for path in (out / "grafana/provisioning/datasources").glob("*.yaml"):
            assert list(validator.iter_errors(yaml.safe_load(path.read_text()))) == [], path
    with pytest.raises(ValueError, match="traces"):
        dashboards.export(tmp_path / "x", traces="zipkin")
