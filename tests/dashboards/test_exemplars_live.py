"""The second click, live: the bail-rate panels' exemplars name traces that were exported.

``symfonic-otel demo --otlp`` exports its spans to a real OTLP receiver and serves /metrics;
Prometheus, started as the exported config says (``--enable-feature=exemplar-storage``), scrapes
it. For every overview panel target that shows exemplars on the silent-bail counter, Prometheus'
``/api/v1/query_exemplars`` of the panel's own query (the noisy tenant selected, as the page's
``dashboard_url`` does) returns exemplars whose ``trace_id`` is the trace of a bailing run the
receiver got: what Grafana's exemplar link opens in the trace data source.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.otlp_receiver import HttpOtlpReceiver
from tests.support.prometheus_support import PrometheusServer, free_port, require_binary

ROOT = Path(__file__).resolve().parents[2]
OVERVIEW = ROOT / "dashboards" / "symfonic-agent-overview.json"
PROMETHEUS_CONFIG = ROOT / "dashboards" / "prometheus" / "prometheus.yml"
NOISY = "globex"  # the demo's default noisy tenant (silent bails)
BAILS = "symfonic_react_silent_bails_total"
FLAG = "--enable-feature=exemplar-storage"
SUBSTITUTIONS = {
    "${datasource}": "",
    "$__rate_interval": "30s",
    "$__interval": "5s",
    "$__range": "1m",
    "$tenant": NOISY,
}

pytestmark = pytest.mark.timeout(180)


def _exemplar_targets() -> list[tuple[str, str]]:
    """(panel title, query with the noisy tenant selected) of every bail target with exemplars."""
    board: dict[str, Any] = json.loads(OVERVIEW.read_text())
    panels = list(board["panels"])
    for row in board["panels"]:
        panels.extend(row.get("panels", []))
    found = []
    for panel in panels:
        for target in panel.get("targets", []):
            if target.get("exemplar") and BAILS in target["expr"]:
                expr = target["expr"]
                for variable, value in SUBSTITUTIONS.items():
                    expr = expr.replace(variable, value)
                found.append((panel["title"], expr))
    return found


def test_the_shipped_prometheus_command_turns_exemplar_storage_on() -> None:
    assert FLAG in PROMETHEUS_CONFIG.read_text()


def test_bail_rate_exemplars_name_exported_traces_of_the_paged_tenant(tmp_path: Path) -> None:
    require_binary("prometheus")
    targets = _exemplar_targets()
    assert len(targets) >= 2  # the bail rate per tenant, and per agent for the paged tenant
    port = free_port()
    with HttpOtlpReceiver() as receiver:
        env = dict(
            os.environ,
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_BSP_SCHEDULE_DELAY="500",
        )
        command = [sys.executable, "-m", "symfonic_otel", "demo", "--otlp", "--duration", "90"]
        command += ["--rate", "20", "--prometheus-port", str(port)]
        (tmp_path / "prometheus").mkdir()
        with (
            (tmp_path / "demo.stderr").open("wb") as stderr,
            subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr) as demo,
        ):
            try:
                with PrometheusServer(
                    tmp_path / "prometheus",
                    scrape_targets=[f"127.0.0.1:{port}"],
                    extra_args=[FLAG],
                ) as prom:
                    found: dict[str, set[str]] = {}

                    def every_panel_has_exemplars() -> bool:
                        end = time.time()
                        for title, expr in targets:
                            data = prom.api(
                                "query_exemplars",
                                [
                                    ("query", expr),
                                    ("start", f"{end - 300:.3f}"),
                                    ("end", f"{end:.3f}"),
                                ],
                            )
                            ids = {
                                exemplar["labels"]["trace_id"]
                                for series in data
                                if series["seriesLabels"].get("tenant_id") == NOISY
                                for exemplar in series["exemplars"]
                            }
                            if ids:
                                found[title] = ids
                        return len(found) == len(targets)

                    assert prom.wait_for(every_panel_has_exemplars, timeout_s=60, interval_s=1.0), (
                        found,
                        prom.log_tail(),
                    )
            finally:
                demo.terminate()
                demo.wait(timeout=30)
        trace_ids = set().union(*found.values())

        def exported() -> bool:
            return trace_ids <= {span.trace_id for span in receiver.spans()}

        assert receiver.wait_for(lambda _: exported(), timeout=20), trace_ids - {
            span.trace_id for span in receiver.spans()
        }
        # Each names a run of the paged tenant that bailed: what the on-call opens.
        runs = {
            span.trace_id: span
            for span in receiver.spans()
            if span.name.startswith("invoke_agent") and span.trace_id in trace_ids
        }
        assert set(runs) == trace_ids
        for span in runs.values():
            assert span.attributes["tenant.id"] == NOISY
            assert span.attributes.get("symfonic.react.termination_reason")
