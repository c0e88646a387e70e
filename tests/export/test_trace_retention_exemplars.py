"""Exemplars only name traces that are exported.

With no trace exporter (the Prometheus-only setup) spans are still sampled, yet no trace of a
run is stored: no exemplar carries a trace id, ours on the per-tenant counters nor the SDK's on
the histograms, and the setup says why in one log line. An exporter added later brings them
back. Under outcome retention at ratio 0.01, a real Prometheus with exemplar storage scraping
the endpoint stores the paging tenant's bail exemplars, and every trace id it returns (bails
and histograms alike) arrived at the OTLP receiver.
"""

from __future__ import annotations

import asyncio
import urllib.request
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
from structlog.testing import capture_logs

from symfonic_otel import OTelCallbackHandler
from symfonic_otel.export.setup import Telemetry, configure_telemetry
from tests.support.configured_handler import handler_on
from tests.support.prometheus_support import require_binary
from tests.support.recorded import reader_points
from tests.support.retaining_telemetry import retaining_telemetry
from tests.support.retention_runs import PlannedRun, plan, play_all
from tests.support.stored_exemplars import storing_exemplars, trace_ids

OPENMETRICS = "application/openmetrics-text; version=1.0.0"


pytestmark = pytest.mark.usefixtures("clean_otel_and_symfonic_env")


def _scrape(telemetry: Telemetry) -> str:
    request = urllib.request.Request(f"http://127.0.0.1:{telemetry.prometheus_port}/metrics")
    request.add_header("Accept", OPENMETRICS)
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(response.read().decode())


def _exemplar_trace_ids(text: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for family in parse_om(text):
        for sample in family.samples:
            if sample.exemplar is not None:
                found.setdefault(family.name, set()).add(sample.exemplar.labels["trace_id"])
    return found


def _bails(handler: OTelCallbackHandler, prefix: str) -> None:
    runs = [PlannedRun(kind, f"{prefix}-{kind}", "globex") for kind in ("bail", "error")]
    asyncio.run(play_all(handler, [*runs, PlannedRun("healthy", f"{prefix}-ok", "acme")]))


def test_without_a_trace_exporter_no_exemplar_names_a_trace() -> None:
    reader = InMemoryMetricReader()
    with capture_logs() as logs:
        telemetry = configure_telemetry(
            otlp=False, prometheus_port=0, set_global=False, metric_readers=[reader]
        )
    try:
        (line,) = [e for e in logs if e["event"] == "symfonic_otel.exemplars_without_trace_ids"]
        assert "no trace exporter" in line["reason"]
        handler = OTelCallbackHandler(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
        _bails(handler, "before")
        assert _exemplar_trace_ids(_scrape(telemetry)) == {}
        points = reader_points(reader)
        assert points and not any(getattr(p, "exemplars", None) for p in points)

        # An exporter added afterwards: from then on the exemplars name its traces.
        exported = InMemorySpanExporter()
        telemetry.tracer_provider.add_span_processor(SimpleSpanProcessor(exported))
        _bails(handler, "after")
        stored = {f"{s.context.trace_id:032x}" for s in exported.get_finished_spans()}
        linked = _exemplar_trace_ids(_scrape(telemetry))
        assert linked.get("symfonic_react_silent_bails")
        assert all(ids <= stored for ids in linked.values()), linked
    finally:
        telemetry.shutdown()


def test_prometheus_exemplars_at_one_percent_all_name_traces_at_the_receiver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_binary("prometheus")
    with retaining_telemetry(monkeypatch) as (receiver, telemetry):
        handler = handler_on(telemetry)
        try:
            with storing_exemplars(tmp_path, telemetry) as exemplars:
                asyncio.run(play_all(handler, plan(400)))
                paging = "tenant-00"  # one of the tenants with bails
                bails = f'symfonic_react_silent_bails_total{{tenant_id="{paging}"}}'
                series = exemplars.wait_for(bails)
                histograms = exemplars.of("gen_ai_client_operation_duration_seconds_bucket")
        finally:
            assert telemetry.shutdown()
        at_receiver = {span.trace_id for span in receiver.spans()}

    assert trace_ids(series) and trace_ids(series) <= at_receiver
    assert {entry["seriesLabels"]["tenant_id"] for entry in series} == {paging}
    assert trace_ids(histograms) and trace_ids(histograms) <= at_receiver
    # Most traces were not exported: the exemplars were chosen, not lucky.
    assert len(at_receiver) < 0.5 * 400
