"""The names module agrees with the docs' metrics table and the real OTel -> Prometheus exporter."""

from __future__ import annotations

import re
from pathlib import Path

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry, generate_latest

from symfonic_otel import semconv
from symfonic_otel.emit import tenant_counters, tenant_hub
from symfonic_otel.emit.instruments import Instruments
from symfonic_otel.emit.tenant_counters import TenantCounters
from symfonic_otel.emit.tenants import ActiveTenants
from symfonic_otel.export.retention import OutcomeRetentionSpanProcessor

METRICS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "metrics.md"


def _documented_metric_rows() -> dict[str, list[str]]:
    text = METRICS_PAGE.read_text(encoding="utf-8")
    table = text.split("<!-- metrics-table:start -->")[1].split("<!-- metrics-table:end -->")[0]
    rows: dict[str, list[str]] = {}
    for line in table.strip().splitlines()[2:]:
        cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
        rows[cells[0]] = cells
    return rows


def test_documented_metric_table_matches_the_names_module() -> None:
    rows = _documented_metric_rows()
    assert set(rows) == {spec.name for spec in semconv.ALL_INSTRUMENTS}
    for spec in semconv.ALL_INSTRUMENTS:
        _, kind, unit, prometheus, _ = rows[spec.name]
        assert (kind, unit, prometheus) == (spec.kind, spec.unit, spec.prometheus_name), spec.name


def test_every_histogram_advises_its_bucket_boundaries() -> None:
    """None falls back to the SDK's default boundaries, which suit no unit here."""
    histograms = [spec for spec in semconv.ALL_INSTRUMENTS if spec.kind == "histogram"]
    assert histograms
    for spec in histograms:
        assert spec.buckets and list(spec.buckets) == sorted(set(spec.buckets)), spec.name


def test_prometheus_names_match_the_real_exporter() -> None:
    registry = CollectorRegistry()
    reader = PrometheusMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    registry.register(reader._collector)
    meter = provider.get_meter("names-test")
    instruments = Instruments.create(meter)
    for field_name in instruments.__dataclass_fields__:
        instrument = getattr(instruments, field_name)
        if hasattr(instrument, "record"):
            instrument.record(1.0, {"tenant.id": "t"})
        else:
            instrument.add(1, {"tenant.id": "t"})
    # The per-tenant counters: a store's totals, handed to the provider's readers.
    store = TenantCounters(ActiveTenants(), detail_cap=4)
    tenant_hub.register(store, meter, provider)
    for spec in tenant_counters.TENANT_COUNTERS:
        store.add(spec.name, "t", {"tenant.id": "t"}, 1)
    # The SDK setup's own counter (``configure_telemetry`` observes its span processors).
    spec = semconv.DROPPED_SPANS
    meter.create_counter(spec.name, unit=spec.unit).add(1, {"tenant.id": "t"})
    # Outcome retention's counters, observed from the processor (every decision at zero).
    retention = OutcomeRetentionSpanProcessor(
        SimpleSpanProcessor(InMemorySpanExporter()),
        healthy_trace_ratio=0.5,
        meter_provider=provider,
    )
    exposition = generate_latest(registry).decode()
    del retention
    exported = set(re.findall(r"^# TYPE (\S+) ", exposition, flags=re.MULTILINE))
    for spec in semconv.ALL_INSTRUMENTS:
        assert spec.prometheus_name in exported, (spec.prometheus_name, sorted(exported))
    assert 'tenant_id="t"' in exposition
    provider.shutdown()


def test_label_translation() -> None:
    assert semconv.prometheus_label("tenant.id") == "tenant_id"
    assert semconv.prometheus_label("gen_ai.request.model") == "gen_ai_request_model"


def test_semconv_histogram_buckets_are_the_genai_ones() -> None:
    assert semconv.CLIENT_OPERATION_DURATION.buckets == (
        0.01,
        0.02,
        0.04,
        0.08,
        0.16,
        0.32,
        0.64,
        1.28,
        2.56,
        5.12,
        10.24,
        20.48,
        40.96,
        81.92,
    )
    assert semconv.CLIENT_TOKEN_USAGE.buckets == tuple(4**i for i in range(14))
