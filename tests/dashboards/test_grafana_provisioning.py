"""Grafana provisioning: a trace data source (Tempo or Jaeger) and the exemplar link to it.

Every shipped data source file validates against the fields Grafana's provisioning reads
(``grafana/datasource-provisioning.schema.json``: the yaml tags of Grafana's provisioning types
and the jsonData options of the Prometheus, Tempo and Jaeger data sources). Grafana ignores a key
it does not know, so a misspelt field would be an exemplar link that silently never appears:
the schema rejects unknown keys, and a test shows it does.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped, unused-ignore]
import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "dashboards" / "grafana"
DATASOURCES = GRAFANA / "provisioning" / "datasources"
JAEGER = GRAFANA / "variants" / "jaeger" / "symfonic-traces.yaml"
SCHEMA = Path(__file__).resolve().parent / "grafana" / "datasource-provisioning.schema.json"
# The exemplar label that carries the trace id (tests/emit/test_exemplars.py reads it back from
# the OpenMetrics endpoint and from a real Prometheus).
EXEMPLAR_TRACE_LABEL = "trace_id"
FILES = [*sorted(DATASOURCES.glob("*.yaml")), JAEGER]


def validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(json.loads(SCHEMA.read_text()))


def load(path: Path) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(path.read_text())
    return config


def sources(path: Path) -> list[dict[str, Any]]:
    return list(load(path)["datasources"])


def errors(config: dict[str, Any]) -> list[str]:
    return [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message[:200]}"
        for error in validator().iter_errors(config)
    ]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(GRAFANA).as_posix())
def test_valid_against_grafanas_provisioning_fields(path: Path) -> None:
    assert errors(load(path)) == []


def test_prometheus_links_exemplars_to_the_trace_data_source() -> None:
    (prometheus,) = sources(DATASOURCES / "symfonic-prometheus.yaml")
    (tempo,) = sources(DATASOURCES / "symfonic-traces.yaml")
    (jaeger,) = sources(JAEGER)
    assert tempo["type"] == "tempo" and jaeger["type"] == "jaeger"
    # Both variants carry the uid the exemplar link names: switching backends keeps the link.
    assert tempo["uid"] == jaeger["uid"]
    (destination,) = prometheus["jsonData"]["exemplarTraceIdDestinations"]
    assert destination["name"] == EXEMPLAR_TRACE_LABEL
    assert destination["datasourceUid"] == tempo["uid"]
    assert "url" not in destination  # an internal link: Grafana opens the trace itself
    # The dashboards' datasource variable picks the default data source: Prometheus stays it.
    assert prometheus["isDefault"] is True
    assert not tempo.get("isDefault") and not jaeger.get("isDefault")
    for source in (tempo, jaeger):
        assert source["access"] == "proxy" and source["url"].startswith("http")
    # Tempo's service graph reads the same Prometheus.
    assert tempo["jsonData"]["serviceMap"]["datasourceUid"] == prometheus["uid"]


def test_one_data_source_per_uid_once_provisioned() -> None:
    """Grafana loads every file of the folder: the trace source is there once, Jaeger is not."""
    uids = [
        source["uid"] for path in sorted(DATASOURCES.glob("*.yaml")) for source in sources(path)
    ]
    assert len(uids) == len(set(uids)) == 2


@pytest.mark.parametrize(
    ("where", "change"),
    [
        ("misspelt link", lambda c: c["jsonData"].update(exemplarTraceIDDestinations=[])),
        (
            "destination without its label",
            lambda c: c["jsonData"]["exemplarTraceIdDestinations"][0].pop("name"),
        ),
        (
            "misspelt destination field",
            lambda c: c["jsonData"]["exemplarTraceIdDestinations"][0].update(datasourceUID="x"),
        ),
        ("unknown top-level field", lambda c: c.update(isDefualt=True)),
        ("uid too long", lambda c: c.update(uid="u" * 41)),
    ],
)
def test_the_schema_rejects_what_grafana_would_ignore(where: str, change: Any) -> None:
    config = copy.deepcopy(load(DATASOURCES / "symfonic-prometheus.yaml"))
    change(config["datasources"][0])
    assert errors(config), where


def test_the_schema_checks_each_types_options() -> None:
    tempo = copy.deepcopy(load(DATASOURCES / "symfonic-traces.yaml"))
    tempo["datasources"][0]["jsonData"]["traceIdTimeParams"] = {"enabled": True}  # Jaeger's
    assert errors(tempo)
    jaeger = copy.deepcopy(load(JAEGER))
    jaeger["datasources"][0]["jsonData"]["serviceMap"] = {"datasourceUid": "x"}  # Tempo's
    assert errors(jaeger)
