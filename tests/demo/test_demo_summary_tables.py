"""The demo's summary tables over real OTel SDK metrics, rendered in process: latency
percentiles in milliseconds, and tenants ranked by their silent-bail rate, worst first."""

from __future__ import annotations

import re

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from rich.console import Console

from symfonic_otel import semconv
from symfonic_otel.demo.report import render_summary


def _rendered() -> str:
    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("test")
    latency = meter.create_histogram(semconv.CLIENT_OPERATION_DURATION.name, unit="s")
    for _ in range(20):  # the SDK's default buckets: all in (0, 5]
        latency.record(0.2, {semconv.NODE_NAME: "react"})
    runs = meter.create_counter(semconv.AGENT_RUNS.name)
    bails = meter.create_counter(semconv.SILENT_BAILS.name)
    runs.add(10, {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "completed"})
    runs.add(4, {semconv.TENANT_ID: "globex", semconv.RUN_OUTCOME: "completed"})
    bails.add(1, {semconv.TENANT_ID: "acme"})
    bails.add(2, {semconv.TENANT_ID: "globex"})
    console = Console(record=True, width=160)
    render_summary(console, reader.get_metrics_data(), [])
    return console.export_text()


def test_latency_percentiles_are_the_50th_and_95th_in_milliseconds() -> None:
    row = next(line for line in _rendered().splitlines() if re.search(r"\breact\b", line))
    cells = [cell.strip() for cell in row.split("│") if cell.strip()]
    assert cells == ["react", "20", "2,500 ms", "4,750 ms"]


def test_tenants_are_ranked_by_bail_rate_worst_first() -> None:
    text = _rendered()
    bail_table = text[text.index("Silent bails per tenant") :]
    assert bail_table.index("globex") < bail_table.index("acme")
    globex = next(line for line in bail_table.splitlines() if "globex" in line)
    assert "50.0 %" in globex
