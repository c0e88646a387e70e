"""Every query the shipped Grafana dashboards run, with Grafana's variables substituted, so a
live test can run each against a real Prometheus or VictoriaMetrics."""

from __future__ import annotations

import json
from typing import Any, Final

from tests.support.fleet_support import DASHBOARDS

SUBSTITUTIONS: Final = {  # Grafana variables -> values for a direct query
    "${datasource}": "",
    "$__rate_interval": "30s",
    "$__interval": "5s",
    "$__range": "1m",
    "$tenant": ".*",
}


def substitute(expr: str) -> str:
    for variable, value in sorted(SUBSTITUTIONS.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace(variable, value)
    assert "$" not in expr, f"unsubstituted variable in {expr!r}"
    return expr


def dashboard_queries() -> list[tuple[str, str, str]]:
    """(dashboard file, panel title, query) for every panel target and annotation query."""
    queries: list[tuple[str, str, str]] = []
    for path in sorted(DASHBOARDS.glob("*.json")):
        board: dict[str, Any] = json.loads(path.read_text())
        panels = list(board.get("panels", []))
        for row in board.get("panels", []):
            panels.extend(row.get("panels", []))
        for panel in panels:
            for target in panel.get("targets", []):
                queries.append((path.name, panel["title"], substitute(target["expr"])))
        for annotation in board.get("annotations", {}).get("list", []):
            if annotation.get("expr"):
                name = f"annotation {annotation['name']}"
                queries.append((path.name, name, substitute(annotation["expr"])))
    return queries
