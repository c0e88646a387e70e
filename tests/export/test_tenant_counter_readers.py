"""The per-tenant counters reach every reader from the package's own store, as they did from
the SDK's: the endpoint's exposition, the user's own readers, OTLP exemplars, the fallback.

``tests/data/exposition.*.txt`` were recorded from the endpoint while these counters were still
SDK observable counters; the same traffic must give the same families, HELP, TYPE, unit, label
sets and values now.
"""

from __future__ import annotations

import asyncio
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricsData, Sum
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
from structlog.testing import capture_logs

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.emit import reader_hook
from symfonic_otel.emit.tenant_counters import TENANT_COUNTER_NAMES
from symfonic_otel.export.setup import Telemetry, configure_telemetry
from tests.support.exposition_traffic import TENANT_FAMILIES, parse, play_traffic, scrape

DATA = Path(__file__).resolve().parents[1] / "support" / "data"


@pytest.fixture
def endpoint() -> Iterator[tuple[Telemetry, OTelCallbackHandler]]:
    telemetry = configure_telemetry(
        otlp=False, prometheus_port=0, set_global=False, service_name="golden"
    )
    handler = OTelCallbackHandler(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    yield telemetry, handler
    telemetry.shutdown()


def _recorded(kind: str) -> tuple[dict[str, Any], dict[Any, float]]:
    return parse((DATA / f"exposition.{kind}.txt").read_text())


@pytest.mark.parametrize("openmetrics", [False, True], ids=["text", "openmetrics"])
def test_the_endpoint_serves_what_the_sdk_path_served_for_the_same_traffic(
    endpoint: tuple[Telemetry, OTelCallbackHandler], openmetrics: bool
) -> None:
    telemetry, handler = endpoint
    asyncio.run(play_traffic(handler))
    served = scrape(telemetry.prometheus_port or 0, openmetrics)
    families, series = parse(served)
    recorded_families, recorded_series = _recorded("openmetrics" if openmetrics else "text")
    assert set(families) == set(TENANT_FAMILIES)
    assert families == recorded_families  # HELP, TYPE and unit of every family
    assert series == recorded_series  # every series: name, label set, value
    # The SDK's own families are still there, each once, and the OpenMetrics text ends once.
    assert "gen_ai_client_operation_duration_seconds" in served
    if openmetrics:
        assert served.count("# EOF") == 1 and served.endswith("# EOF\n")
        assert list(parse_om(served))  # the strict OpenMetrics parser accepts the whole text


def test_gzip_is_served_when_asked(endpoint: tuple[Telemetry, OTelCallbackHandler]) -> None:
    import gzip

    telemetry, handler = endpoint
    asyncio.run(play_traffic(handler))
    request = urllib.request.Request(f"http://127.0.0.1:{telemetry.prometheus_port}/metrics")
    request.add_header("Accept-Encoding", "gzip")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        text = gzip.decompress(response.read()).decode()
    assert parse(text)[1] == _recorded("text")[1]


def _user_provider() -> tuple[MeterProvider, InMemoryMetricReader, CollectorRegistry]:
    registry = CollectorRegistry()
    memory = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[memory, PrometheusMetricReader(registry=registry)])
    return provider, memory, registry


def _tenant_points(data: MetricsData | None) -> dict[tuple[str, frozenset[Any]], float]:
    found: dict[tuple[str, frozenset[Any]], float] = {}
    for resource_metrics in data.resource_metrics if data else ():
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name in TENANT_COUNTER_NAMES:
                    assert isinstance(metric.data, Sum) and metric.data.is_monotonic
                    for point in metric.data.data_points:
                        key = (metric.name, frozenset(point.attributes.items()))
                        assert key not in found, f"point twice: {key}"
                        found[key] = point.value
    return found


def test_every_reader_of_a_users_own_provider_gets_them_without_code() -> None:
    """An in-memory reader (what OTLP sends) and the SDK's own Prometheus reader on a user's
    MeterProvider: the same series and values as the endpoint, nothing configured for it."""
    provider, memory, registry = _user_provider()
    handler = OTelCallbackHandler(meter_provider=provider, tracer_provider=TracerProvider())
    try:
        asyncio.run(play_traffic(handler))
        points = _tenant_points(memory.get_metrics_data())
        served = generate_latest(registry).decode()
    finally:
        provider.shutdown()
    assert parse(served)[1] == _recorded("text")[1]
    runs = {
        dict(attrs)[semconv.TENANT_ID]: value
        for (name, attrs), value in points.items()
        if name == semconv.AGENT_RUNS.name
        and dict(attrs).get(semconv.RUN_OUTCOME) == "completed"
        and dict(attrs).get(semconv.RESPONSE_EMPTY) is False
    }
    assert runs == {"acme": 4, "globex": 2, "initech": 0}
    # They are not SDK instruments: the reader's SDK storage holds none of them.
    storage = provider._measurement_consumer._reader_storages[memory]  # type: ignore[attr-defined]
    names = {instrument.name for instrument in storage._instrument_view_instrument_matches}
    assert not names & TENANT_COUNTER_NAMES


def test_a_bails_trace_is_its_tenants_exemplar_on_every_reader() -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider, memory, _ = _user_provider()
    handler = OTelCallbackHandler(meter_provider=provider, tracer_provider=tracer_provider)
    try:
        asyncio.run(play_traffic(handler))
        data = memory.get_metrics_data()
    finally:
        provider.shutdown()
    bailing_runs = {
        span.attributes.get(semconv.RUN_ID): f"{span.context.trace_id:032x}"
        for span in exporter.get_finished_spans()
        if span.name.startswith("invoke_agent") and span.attributes
    }
    exemplars: dict[tuple[str, str], str] = {}
    for resource_metrics in data.resource_metrics if data else ():
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name != semconv.SILENT_BAILS.name:
                    continue
                for point in metric.data.data_points:
                    if point.value and point.exemplars:
                        (exemplar,) = point.exemplars
                        assert exemplar.trace_id is not None
                        reason = str(point.attributes[semconv.REACT_TERMINATION_REASON])
                        tenant = str(point.attributes[semconv.TENANT_ID])
                        exemplars[(tenant, reason)] = f"{exemplar.trace_id:032x}"
    # globex bailed three times: its latest bail of each reason is the one linked.
    assert exemplars == {
        ("acme", "tool_calls_with_no_text"): bailing_runs["acme-bail"],
        ("globex", "tool_calls_with_no_text"): bailing_runs["globex-2"],
        ("globex", "no_content_no_tool_calls"): bailing_runs["globex-3"],
    }


def test_exemplars_ride_on_openmetrics_only(
    endpoint: tuple[Telemetry, OTelCallbackHandler],
) -> None:
    telemetry, handler = endpoint
    # Exemplars only name exported traces: this endpoint's traces go to an exporter.
    exported = InMemorySpanExporter()
    telemetry.tracer_provider.add_span_processor(SimpleSpanProcessor(exported))
    asyncio.run(play_traffic(handler))
    port = telemetry.prometheus_port or 0
    om = {
        sample.labels["tenant_id"]: sample.exemplar
        for family in parse_om(scrape(port, openmetrics=True))
        if family.name == "symfonic_react_silent_bails"
        for sample in family.samples
        if sample.value and sample.labels["symfonic_react_termination_reason"].startswith("tool")
    }
    assert set(om) == {"acme", "globex"} and all(e is not None for e in om.values())
    assert all(len(e.labels["trace_id"]) == 32 and e.value == 1 for e in om.values() if e)
    stored = {f"{span.context.trace_id:032x}" for span in exported.get_finished_spans()}
    assert {e.labels["trace_id"] for e in om.values() if e} <= stored
    assert " # {" not in scrape(port)


def test_without_the_sdk_hook_they_fall_back_to_observable_counters_and_say_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(reader_hook, "available", lambda provider: False)
    provider, _, registry = _user_provider()
    with capture_logs() as logs:
        handler = OTelCallbackHandler(meter_provider=provider, tracer_provider=TracerProvider())
        OTelCallbackHandler(meter_provider=provider, tracer_provider=TracerProvider())
    try:
        asyncio.run(play_traffic(handler))
        served = generate_latest(registry).decode()
    finally:
        provider.shutdown()
    warnings = [
        e for e in logs if e["event"] == "symfonic_otel.tenant_counters_through_sdk_instruments"
    ]
    assert len(warnings) == 1 and warnings[0]["log_level"] == "warning"
    assert warnings[0]["provider"] == "MeterProvider"  # which provider, and why it costs memory
    assert "observable counters" in warnings[0]["hint"]
    assert parse(served)[1] == _recorded("text")[1]


def test_concurrent_scrapes_and_collections_never_tear_repeat_or_go_back() -> None:
    """Many threads record while scrapes (both formats) and OTLP-style collections run: every
    scrape parses, no series twice, and no series reads lower than it did earlier."""
    memory = InMemoryMetricReader()
    telemetry = configure_telemetry(
        otlp=False, prometheus_port=0, set_global=False, metric_readers=[memory]
    )
    handler = OTelCallbackHandler(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    port = telemetry.prometheus_port or 0
    stop = threading.Event()
    errors: list[BaseException] = []

    def record(worker: int) -> None:
        try:
            index = 0
            while not stop.is_set():
                asyncio.run(
                    _one_run(handler, f"t{(worker * 7 + index) % 40}", f"w{worker}-{index}")
                )
                index += 1
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    def flush() -> None:
        exported: dict[Any, float] = {}
        try:
            while not stop.is_set():
                telemetry.force_flush(timeout_millis=5_000)
                for key, value in _tenant_points(memory.get_metrics_data()).items():
                    assert value >= exported.get(key, 0.0), f"{key} went back to {value}"
                    exported[key] = value
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=record, args=(w,)) for w in range(4)]
    threads.append(threading.Thread(target=flush))
    for thread in threads:
        thread.start()
    seen: dict[Any, float] = {}
    try:
        for round_ in range(12):
            _, series = parse(scrape(port, openmetrics=bool(round_ % 2)))  # asserts no repeats
            for key, value in series.items():
                assert value >= seen.get(key, 0.0), f"{key} went back to {value}"
                seen[key] = value
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        telemetry.shutdown()
    assert not errors, errors
    assert len({dict(labels).get("tenant_id") for _, labels in seen}) == 40


async def _one_run(handler: OTelCallbackHandler, tenant: str, run_id: str) -> None:
    from symfonic_otel import tenant_scope
    from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent

    with tenant_scope(tenant):
        await handler.on_agent_start(AgentStartEvent(query="q", run_id=run_id))
        usage = {"input_tokens": 3, "output_tokens": 1}
        await handler.on_llm_end(LLMEndEvent(model="m", output="x", usage=usage, run_id=run_id))
        await handler.on_agent_end(
            AgentEndEvent(run_id=run_id, final_response="x", duration_ms=1.0, node_count=1)
        )


def test_the_per_tenant_bail_panel_asks_for_exemplars() -> None:
    import json

    dashboard = json.loads(
        (
            Path(__file__).resolve().parents[2] / "dashboards/symfonic-agent-overview.json"
        ).read_text()
    )
    targets = [
        target
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
        if "sum by (tenant_id) (rate(symfonic_react_silent_bails_total" in target.get("expr", "")
    ]
    assert targets and all(target.get("exemplar") is True for target in targets)


def test_a_dropped_provider_and_its_handlers_are_collected() -> None:
    """The hub of a provider holds nothing that keeps the provider (or its readers) alive."""
    import gc
    import weakref

    provider, _, _ = _user_provider()
    handler = OTelCallbackHandler(meter_provider=provider, tracer_provider=TracerProvider())
    asyncio.run(play_traffic(handler))
    gone = weakref.ref(provider)
    provider.shutdown()
    del provider, handler
    gc.collect()
    assert gone() is None
