"""A process that runs for weeks, tried through its real readers: the Prometheus endpoint
scraped over HTTP, OTLP to a real receiver, the whole process's Python memory measured
(the SDK's included), and a real Prometheus reading a bailing tenant's exemplar.
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.export.setup import configure_telemetry
from tests.emit.test_tenant_churn import _run
from tests.support.configured_handler import handler_on
from tests.support.exposition_traffic import parse, play_traffic, scrape
from tests.support.manual_clock import Clock
from tests.support.otlp_receiver import HttpOtlpReceiver, points_of
from tests.support.prometheus_support import require_binary
from tests.support.stored_exemplars import storing_exemplars, trace_ids

TENANTS: Final = 12_000
ACTIVE: Final = 400
ARRIVAL_S: Final = 12.0
SAMPLE_EVERY: Final = 1_200
# The per-tenant counters the churn's runs add to (no fabrication check, no synthesis).
PLAYED: Final = {
    spec.name
    for spec in (
        semconv.AGENT_RUNS,
        semconv.SILENT_BAILS,
        semconv.STOP_REASONS,
        semconv.LLM_COST,
        semconv.LLM_TOKENS,
    )
}


@pytest.fixture
def receiver() -> Iterator[HttpOtlpReceiver]:
    with HttpOtlpReceiver(max_request_bytes=4 * 1024 * 1024) as server:
        yield server


def test_memory_stays_flat_through_the_real_readers_and_the_newest_tenants_are_served(
    receiver: HttpOtlpReceiver,
) -> None:
    """30 turnovers of the slots, every reader collecting throughout: the process's traced
    memory stays flat once the slots are full, and every scrape and export shows exactly the
    tenants active now, the newest included, none folded into an overflow series."""
    exporter = OTLPMetricExporter(endpoint=f"{receiver.endpoint}/v1/metrics")
    otlp = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    telemetry = configure_telemetry(
        otlp=False, prometheus_port=0, set_global=False, metric_readers=[otlp]
    )
    clock = Clock()
    handler = OTelCallbackHandler(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        max_tenants=ACTIVE,
        tenant_idle_s=ARRIVAL_S * ACTIVE - 1.0,
        clock=clock,
    )
    port = telemetry.prometheus_port or 0
    samples: list[int] = []
    try:
        for index in range(TENANTS):
            clock.now += ARRIVAL_S
            _run(handler, f"tenant-{index}", f"r{index}", bail=index % 10 == 0)
            if index % SAMPLE_EVERY != SAMPLE_EVERY - 1:
                continue
            newest = f"tenant-{index}"
            _, series = parse(scrape(port, openmetrics=index % 2 == 0))
            served = {dict(labels)["tenant_id"] for _, labels in series}
            assert newest in served and len(served) <= ACTIVE
            assert semconv.OVERFLOW_VALUE not in served
            assert telemetry.force_flush(timeout_millis=60_000)
            with receiver._store.lock:  # the receiver's own memory is not the process's
                exported = points_of(receiver._store.metrics)
                receiver._store.metrics.clear()
                receiver._store.raw.clear()
                receiver._store.headers.clear()
            tenants = {p.attributes.get(semconv.TENANT_ID) for p in exported}
            assert newest in tenants and len(tenants - {None}) <= ACTIVE
            assert not any("otel.metric.overflow" in p.attributes for p in exported)
            assert {p.name for p in exported} >= PLAYED
            if index + 1 == 3 * SAMPLE_EVERY:  # the slots have turned over twice
                gc.collect()
                tracemalloc.start()
            elif tracemalloc.is_tracing():
                gc.collect()
                samples.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
        telemetry.shutdown()
    print(f"traced bytes every {SAMPLE_EVERY:,} tenants once the slots turned over: {samples}")
    assert len(samples) == TENANTS // SAMPLE_EVERY - 3
    # Held since then: caches settle within one more turnover of the slots, then nothing grows
    # with the tenants that left (the SDK path grew by about 1.6 KB per set of a departed one).
    assert max(samples) - min(samples) < 2_000_000, samples
    assert max(samples[-4:]) - min(samples[-4:]) < 300_000, samples


def test_promtool_finds_nothing_wrong_with_the_exposition(tmp_path: Path) -> None:
    promtool = require_binary("promtool")
    with configure_telemetry(otlp=False, prometheus_port=0, set_global=False) as telemetry:
        handler = OTelCallbackHandler(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
        asyncio.run(play_traffic(handler))
        text = scrape(telemetry.prometheus_port or 0)
    checked = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0 and not checked.stdout.strip(), checked.stdout + checked.stderr


def test_prometheus_returns_the_paging_tenants_bailing_trace_as_an_exemplar(
    tmp_path: Path,
) -> None:
    spans = InMemorySpanExporter()
    telemetry = configure_telemetry(otlp=False, prometheus_port=0, set_global=False)
    telemetry.tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    handler = handler_on(telemetry)
    try:
        with storing_exemplars(tmp_path, telemetry) as exemplars:
            asyncio.run(play_traffic(handler))
            bailing = {
                f"{span.context.trace_id:032x}"
                for span in spans.get_finished_spans()
                if span.name.startswith("invoke_agent")
                and str((span.attributes or {}).get(semconv.RUN_ID, "")).startswith("globex-")
            }
            series = exemplars.wait_for('symfonic_react_silent_bails_total{tenant_id="globex"}')
    finally:
        telemetry.shutdown()
    assert trace_ids(series) and trace_ids(series) <= bailing
    assert {entry["seriesLabels"]["tenant_id"] for entry in series} == {"globex"}


PENDING_APP: Final = """
import asyncio, sys
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from symfonic_otel import OTelCallbackHandler, tenant_scope
from symfonic_otel.events import AgentEndEvent, AgentStartEvent

handler = OTelCallbackHandler()  # no provider anywhere yet: the global proxy
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))

async def run():
    with tenant_scope("acme"):
        await handler.on_agent_start(AgentStartEvent(query="q", run_id="r"))
        await handler.on_agent_end(AgentEndEvent("r", "answer", 1.0, 1))

asyncio.run(run())
for _ in range(2):  # the first collection attaches the waiting handler
    data = reader.get_metrics_data()
names = {m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
print("symfonic.agent.runs" in names)
"""


def test_a_handler_built_before_the_global_provider_reaches_its_readers() -> None:
    import sys

    done = subprocess.run(
        [sys.executable, "-c", PENDING_APP], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


CONFIGURED_LATER_APP: Final = """
import asyncio
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from symfonic_otel import OTelCallbackHandler, configure_telemetry, tenant_scope
from symfonic_otel.events import AgentEndEvent, AgentStartEvent

handler = OTelCallbackHandler()  # a module-level handler, built before the setup
reader = InMemoryMetricReader()
telemetry = configure_telemetry(otlp=False, metric_readers=[reader])

async def run():
    with tenant_scope("acme"):
        await handler.on_agent_start(AgentStartEvent(query="q", run_id="r"))
        await handler.on_agent_end(AgentEndEvent("r", "answer", 1.0, 1))

asyncio.run(run())
data = reader.get_metrics_data()  # the first collection
names = {m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
print("symfonic.agent.runs" in names)
telemetry.shutdown()
"""


def test_configure_telemetry_after_the_handler_reports_from_the_first_collection() -> None:
    import sys

    done = subprocess.run(
        [sys.executable, "-c", CONFIGURED_LATER_APP], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
