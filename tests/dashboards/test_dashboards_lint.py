"""Static checks of the Grafana dashboards (and of the metric names the rules use).

Importable as is and by file provisioning: a ``datasource`` variable used by every panel and
target, a ``tenant`` variable, stable uids, no hard-coded datasource uid, no ``__inputs``. Every
metric a query names is one the names module defines, in its Prometheus form. Each dashboard
validates against Grafana's published dashboard schema (``tests/grafana/dashboard.schema.json``,
from the npm package ``@grafana/schema``), and the provisioning files load them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import jsonschema  # type: ignore[import-untyped, unused-ignore]
import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from symfonic_otel import semconv

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = ROOT / "dashboards"
RULES = DASHBOARDS / "prometheus" / "symfonic-rules.yml"
PROVISIONING = DASHBOARDS / "grafana" / "provisioning"
SCHEMA = Path(__file__).resolve().parent / "grafana" / "dashboard.schema.json"
EXPECTED_UIDS = {
    "symfonic-agent-overview.json": "symfonic-agent-overview",
    "symfonic-fabrication.json": "symfonic-fabrication",
}
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
TENANT_QUERY = "label_values(symfonic_agent_runs_total, tenant_id)"
GRAFANA_BUILTINS = {
    "__all", "__interval", "__interval_ms", "__rate_interval", "__rate_interval_ms", "__range",
    "__range_s", "__range_ms", "__from", "__to", "__dashboard", "__org", "__user", "timeFilter",
}  # fmt: skip
PROMETHEUS_BUILTINS = {"up", "ALERTS", "ALERTS_FOR_STATE", "target_info"}
EXTRA_LABELS = {"le", "alertname", "alertstate", "severity", "job", "instance", "__name__"}
PROMQL_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
    "offset", "bool", "inf", "nan",
}  # fmt: skip


# --- helpers -------------------------------------------------------------------------------------


def load(name: str) -> dict[str, Any]:
    board: dict[str, Any] = json.loads((DASHBOARDS / name).read_text())
    return board


def all_panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    panels: list[dict[str, Any]] = []
    for panel in board.get("panels", []):
        panels.append(panel)
        panels.extend(panel.get("panels", []))  # collapsed rows hold their panels
    return panels


def queries(board: dict[str, Any]) -> list[str]:
    """Every PromQL expression of a dashboard: targets and annotations."""
    exprs = [t["expr"] for p in all_panels(board) for t in p.get("targets", [])]
    exprs += [a["expr"] for a in board.get("annotations", {}).get("list", []) if a.get("expr")]
    return exprs


def walk(node: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """(key, value) for every value in a JSON tree, the key being the nearest dict key."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield k, v
            yield from walk(v, k)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item, key)


def instruments() -> list[semconv.InstrumentSpec]:
    """Every instrument the names module defines (ALL_INSTRUMENTS and any spec next to it)."""
    specs = list(semconv.ALL_INSTRUMENTS)
    specs += [
        value
        for value in vars(semconv).values()
        if isinstance(value, semconv.InstrumentSpec) and value not in specs
    ]
    return specs


def known_series() -> set[str]:
    names = {name for spec in instruments() for name in semconv.prometheus_series_names(spec)}
    return names | PROMETHEUS_BUILTINS | recording_rules()


def recording_rules() -> set[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule["record"] for group in groups for rule in group["rules"] if "record" in rule}


def known_labels() -> set[str]:
    keys = {
        value
        for name, value in vars(semconv).items()
        if name.isupper() and isinstance(value, str) and "." in value
    }
    return {semconv.prometheus_label(key) for key in keys} | EXTRA_LABELS


def _strip(expr: str) -> str:
    expr = re.sub(r"\$\{[^}]*\}|\$\w+|\[\[\w+\]\]", "", expr)  # Grafana variables
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression selects (not functions, keywords, labels, numbers)."""
    text = _strip(expr)
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # range and subquery windows
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"(?<![\w:])\d+(\.\d+)?([eE][+-]?\d+)?[smhdwy]?\b", " ", text)  # numbers
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        token = match.group(0)
        if text[match.end() :].lstrip().startswith("(") or token.lower() in PROMQL_KEYWORDS:
            continue
        names.add(token)
    return names


def label_names(expr: str) -> set[str]:
    """Label names used in matchers and in by / without / on / ignoring / group_* clauses."""
    text = _strip(expr)
    labels: set[str] = set()
    for matchers in re.findall(r"\{([^}]*)\}", text):
        labels.update(re.findall(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)", matchers))
    for clause in re.findall(
        r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", text
    ):
        labels.update(name.strip() for name in clause.split(",") if name.strip())
    return labels


def test_extractors_see_what_they_should() -> None:
    expr = (
        "histogram_quantile(0.95, sum by (le, gen_ai_request_model) (rate("
        'gen_ai_client_operation_duration_seconds_bucket{tenant_id=~"$tenant",error_type!=""}'
        "[$__rate_interval]))) / on (tenant_id) group_left bogus_metric offset 5m > 1e-3"
    )
    assert metric_names(expr) == {"gen_ai_client_operation_duration_seconds_bucket", "bogus_metric"}
    assert label_names(expr) == {"le", "gen_ai_request_model", "tenant_id", "error_type"}
    assert "symfonic_react_silent_bails_total" in known_series()
    assert "gen_ai_client_operation_duration_seconds_bucket" in known_series()
    assert "tenant_id:symfonic_react_silent_bail_ratio:rate10m" in known_series()
    assert "symfonic_agent_stop_reasons_total" in known_series()
    assert {"tenant_id", "symfonic_response_empty", "gen_ai_token_type"} <= known_labels()
    assert "symfonic_run_stop_reason" in known_labels()


# --- the dashboards ------------------------------------------------------------------------------

BOARDS = sorted(EXPECTED_UIDS)


def test_every_dashboard_file_is_checked() -> None:
    assert sorted(p.name for p in DASHBOARDS.glob("*.json")) == BOARDS


@pytest.mark.parametrize("name", BOARDS)
def test_importable_as_is(name: str) -> None:
    board = load(name)
    assert board["uid"] == EXPECTED_UIDS[name]
    assert board["title"].startswith("Symfonic / ")
    assert board["schemaVersion"] >= 39
    assert board.get("id") is None  # provisioning / import assign their own
    assert "__inputs" not in board and "__requires" not in board
    assert "symfonic" in board["tags"]


@pytest.mark.parametrize("name", BOARDS)
def test_template_variables(name: str) -> None:
    variables = {v["name"]: v for v in load(name)["templating"]["list"]}
    datasource = variables["datasource"]
    assert datasource["type"] == "datasource" and datasource["query"] == "prometheus"
    tenant = variables["tenant"]
    assert tenant["type"] == "query"
    assert tenant["datasource"] == DATASOURCE
    assert tenant["definition"] == TENANT_QUERY
    assert tenant["query"]["query"] == TENANT_QUERY
    assert tenant["multi"] is True and tenant["includeAll"] is True
    assert tenant["allValue"] == ".*"


@pytest.mark.parametrize("name", BOARDS)
def test_panel_ids_unique_and_layout_present(name: str) -> None:
    panels = all_panels(load(name))
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), f"duplicate panel ids in {name}"
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["w"] > 0 and grid["h"] > 0 and grid["x"] + grid["w"] <= 24, panel["title"]


@pytest.mark.parametrize("name", BOARDS)
def test_every_panel_and_target_uses_the_datasource_variable(name: str) -> None:
    for panel in all_panels(load(name)):
        if panel["type"] == "row":
            continue
        title = panel["title"]
        assert panel["datasource"] == DATASOURCE, title
        targets = panel["targets"]
        assert targets, f"{title}: no targets"
        ref_ids = [t.get("refId") for t in targets]
        assert all(ref_ids), f"{title}: target without refId"
        assert len(set(ref_ids)) == len(ref_ids), f"{title}: duplicate refId"
        for target in targets:
            assert target["datasource"] == DATASOURCE, title
            assert target["expr"].strip(), title


@pytest.mark.parametrize("name", BOARDS)
def test_no_hard_coded_datasource_uid(name: str) -> None:
    for key, value in walk(load(name)):
        if key == "datasource":
            assert value == DATASOURCE or value == "${datasource}", value


@pytest.mark.parametrize("name", BOARDS)
def test_every_referenced_variable_exists(name: str) -> None:
    board = load(name)
    defined = {v["name"] for v in board["templating"]["list"]} | GRAFANA_BUILTINS
    referenced: set[str] = set()
    for key, value in walk({k: v for k, v in board.items() if k != "templating"}):
        if isinstance(value, str) and key != "current":
            for match in re.finditer(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)", value):
                referenced.add(next(group for group in match.groups() if group))
    assert referenced - defined == set(), f"undefined variables: {referenced - defined}"
    assert {"datasource", "tenant"} <= referenced


@pytest.mark.parametrize("name", BOARDS)
def test_tenant_filter_is_a_regex_match(name: str) -> None:
    """A multi-value variable expands to a|b: only `=~` matches it."""
    for expr in queries(load(name)):
        assert expr.count("$tenant") == expr.count('tenant_id=~"$tenant"'), expr


@pytest.mark.parametrize("name", BOARDS)
def test_every_metric_is_one_the_names_module_defines(name: str) -> None:
    board = load(name)
    known = known_series()
    exprs = queries(board)
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            metric, label = re.fullmatch(
                r"label_values\((\w+),\s*(\w+)\)", variable["definition"]
            ).groups()  # type: ignore[union-attr]
            assert metric in known and label in known_labels()
    for expr in exprs:
        names = metric_names(expr)
        assert names, f"no metric in {expr!r}"
        assert names <= known, f"unknown metrics {names - known} in {expr!r}"
        unknown_labels = label_names(expr) - known_labels()
        assert not unknown_labels, f"unknown labels {unknown_labels} in {expr!r}"


def test_rules_name_only_known_metrics_and_labels() -> None:
    known = known_series()
    groups = yaml.safe_load(RULES.read_text())["groups"]
    for rule in (rule for group in groups for rule in group["rules"]):
        expr = rule["expr"]
        names = metric_names(expr)
        constant = re.fullmatch(r"vector\([\d.]+\)", expr.strip())  # the SLO objective
        assert (names or constant) and names <= known, f"unknown {names - known} in {expr!r}"
        assert label_names(expr) <= known_labels(), expr


# Instruments with no panel yet, each with the reason.
WITHOUT_PANEL: Final = {
    spec.name: "outcome retention's own counters (configure_telemetry(healthy_trace_ratio<1) "
    "only): read with the queries of docs/operators/trace-retention.md"
    for spec in (
        semconv.RETENTION_TRACES,
        semconv.RETENTION_DROPPED_SPANS,
        semconv.RETENTION_LATE_KEEPS,
        semconv.RETENTION_HELD_SPANS,
    )
}


def test_dashboards_cover_every_instrument() -> None:
    """Each instrument the plugin emits appears in at least one panel."""
    used = {
        name for board in BOARDS for expr in queries(load(board)) for name in metric_names(expr)
    }
    for spec in instruments():
        if spec.name in WITHOUT_PANEL:
            continue
        assert used & set(semconv.prometheus_series_names(spec)), f"{spec.name} has no panel"


def test_stop_reasons_have_a_panel_per_tenant() -> None:
    """Issue: the agent overview shows how each tenant's runs end, one panel per tenant."""
    panels = all_panels(load("symfonic-agent-overview.json"))
    repeated = [p for p in panels if p.get("repeat") == "tenant"]
    assert any(
        "symfonic_agent_stop_reasons_total" in t["expr"]
        and "by (symfonic_run_stop_reason)" in t["expr"]
        for p in repeated
        for t in p["targets"]
    )
    for panel in repeated:
        assert "$tenant" in panel["title"]  # each copy names its tenant


# --- Grafana's published schema and the provisioning files ---------------------------------------

# Fields Grafana itself writes that the published model lacks (its AnnotationQuery models only the
# built-in Grafana annotations: a Prometheus annotation keeps its query at the top level; query
# variables keep the query text they show in `definition`).
SCHEMA_GAPS: dict[str, dict[str, Any]] = {
    "AnnotationQuery": {
        "expr": {"type": "string"},
        "step": {"type": "string"},
        "titleFormat": {"type": "string"},
        "textFormat": {"type": "string"},
        "useValueForTime": {"type": "boolean"},
    },
    "VariableModel": {"definition": {"type": "string"}},
}


def grafana_validator() -> jsonschema.Draft7Validator:
    schema: dict[str, Any] = json.loads(SCHEMA.read_text())
    for definition, properties in SCHEMA_GAPS.items():
        target = schema["definitions"][definition]["properties"]
        assert not set(properties) & set(target), "the schema has it now: drop the gap"
        target.update(properties)
    return jsonschema.Draft7Validator(schema)


@pytest.mark.parametrize("name", BOARDS)
def test_valid_against_grafanas_dashboard_schema(name: str) -> None:
    errors = [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message[:200]}"
        for error in grafana_validator().iter_errors(load(name))
    ]
    assert errors == []


def test_the_schema_rejects_what_grafana_would() -> None:
    board = load("symfonic-agent-overview.json")
    board["panels"][1]["gridPos"]["w"] = "wide"
    board["templating"]["list"][1]["refresh"] = 7
    board["style"] = "dark"  # removed from the model
    paths = {tuple(e.absolute_path) for e in grafana_validator().iter_errors(board)}
    assert paths == {("panels", 1), ("templating", "list", 1, "refresh"), ()}


def test_provisioned_data_source_is_the_default_prometheus() -> None:
    config = yaml.safe_load((PROVISIONING / "datasources" / "symfonic-prometheus.yaml").read_text())
    assert config["apiVersion"] == 1
    (source,) = config["datasources"]
    assert source["type"] == "prometheus" and source["access"] == "proxy"
    assert source["url"].startswith("http") and source["isDefault"] is True
    # the dashboards' datasource variable offers every data source of this type
    for board in BOARDS:
        variables = {v["name"]: v for v in load(board)["templating"]["list"]}
        assert variables["datasource"]["query"] == source["type"]


def test_provisioned_dashboards_provider_loads_exactly_the_dashboards() -> None:
    text = (PROVISIONING / "dashboards" / "symfonic.yaml").read_text()
    config = yaml.safe_load(text)
    assert config["apiVersion"] == 1
    (provider,) = config["providers"]
    assert provider["type"] == "file" and provider["folder"]
    path = provider["options"]["path"]
    # the documented mount puts the export directory at that path
    assert f'symfonic-dashboards:{path}"' in text
    grafana_page = DASHBOARDS.parent / "docs" / "operators" / "grafana.md"
    assert f'symfonic-dashboards:{path}"' in grafana_page.read_text()
    # Grafana reads every *.json under it: only the dashboards may be JSON
    json_files = sorted(p.relative_to(DASHBOARDS).as_posix() for p in DASHBOARDS.rglob("*.json"))
    assert json_files == BOARDS


# --- export: the files ship inside the wheel -------------------------------------------------


def test_export_copies_every_bundled_file(tmp_path: Path) -> None:
    from symfonic_otel import dashboards

    written = dashboards.export(tmp_path / "out")
    shipped = [p.relative_to(DASHBOARDS).as_posix() for p in DASHBOARDS.rglob("*") if p.is_file()]
    runbooks = [
        "runbooks/README.md" if p.stem == "index" else f"runbooks/{p.stem}/README.md"
        for p in (DASHBOARDS.parent / "docs" / "runbooks").glob("*.md")
    ]
    expected = sorted(shipped + runbooks)
    assert [p.relative_to(tmp_path / "out").as_posix() for p in written] == expected
    assert dashboards.bundled_files() == expected
    for path in written:
        relative = path.relative_to(tmp_path / "out")
        if relative.parts[0] != "runbooks":  # runbooks: their links rewritten (test_runbook_links)
            assert path.read_bytes() == (DASHBOARDS / relative).read_bytes()
    assert dashboards.export(tmp_path / "out", force=True) == written  # idempotent, overwrites


def test_export_prefers_the_wheels_package_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a wheel the files are package data under symfonic_otel/_dashboards."""
    from symfonic_otel import dashboards

    package = tmp_path / "site" / "symfonic_otel"
    (package / "_dashboards" / "prometheus").mkdir(parents=True)
    (package / "_dashboards" / "prometheus" / "symfonic-rules.yml").write_text("groups: []\n")
    (package / "_runbooks").mkdir()
    (package / "_runbooks" / "SymfonicX.md").write_text("# SymfonicX\n")
    monkeypatch.setattr("importlib.resources.files", lambda _name: package)
    written = dashboards.export(tmp_path / "out")
    assert [p.relative_to(tmp_path / "out").as_posix() for p in written] == [
        "prometheus/symfonic-rules.yml",
        "runbooks/SymfonicX/README.md",
    ]


def test_the_paged_tenants_bails_by_agent_reason_and_model_with_exemplars() -> None:
    """Issue 33: the page's dashboard link selects its tenant; the overview then shows that
    tenant's bails by agent, termination reason, stop reason and model, exemplars on the bail
    rate (they open the bailing run's trace)."""
    board = load("symfonic-agent-overview.json")
    targets = [t for p in all_panels(board) for t in p.get("targets", [])]

    def grouped(metric: str, *labels: str) -> list[dict[str, Any]]:
        return [
            t
            for t in targets
            if metric in metric_names(t["expr"])
            and 'tenant_id=~"$tenant"' in t["expr"]
            and all(
                any(label in clause for clause in re.findall(r"by \(([^)]*)\)", t["expr"]))
                for label in labels
            )
        ]

    rate = grouped("symfonic_react_silent_bails_total", "gen_ai_agent_name")
    assert rate and all(t.get("exemplar") is True for t in rate)
    assert grouped("symfonic_react_silent_bails_total", "symfonic_react_termination_reason")
    assert grouped(
        "symfonic_agent_stop_reasons_total", "gen_ai_agent_name", "symfonic_run_stop_reason"
    )
    assert grouped("symfonic_react_synthesis_fallbacks_total", "gen_ai_request_model")
    # The alerts' dashboard_url opens this dashboard with its tenant variable set.
    rules = RULES.read_text()
    assert f"d/{board['uid']}/" in rules and "var-tenant=" in rules
    assert "tenant" in {v["name"] for v in board["templating"]["list"]}
