"""Recording, scraping, flushing and the periodic export all at once: no increment is sent twice
or lost, and every scrape parses.

A flush (``force_flush``) and the periodic export collect the same delta reader; the
per-tenant counters compute one delta at a time per reader, or both collections would send the
same increments. At the end the deltas the exporter received add up, series by series, to the
totals a cumulative reader sees.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.metrics import Counter
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)

from symfonic_otel import OTelCallbackHandler, semconv, tenant_scope
from symfonic_otel.emit.tenant_counters import TENANT_COUNTER_NAMES
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.export.setup import configure_telemetry
from tests.support.exposition_traffic import parse, scrape

Key = tuple[str, frozenset[tuple[str, Any]]]


class DeltaSink(MetricExporter):
    """Adds up every per-tenant delta point it is sent."""

    def __init__(self) -> None:
        super().__init__(preferred_temporality={Counter: AggregationTemporality.DELTA})
        self.sums: dict[Key, float] = {}
        self.exports = 0
        self._lock = threading.Lock()

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        with self._lock:
            self.exports += 1
            for key, value in _points(metrics_data, AggregationTemporality.DELTA):
                self.sums[key] = self.sums.get(key, 0.0) + value
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        return None


def _points(
    data: MetricsData | None, temporality: AggregationTemporality
) -> list[tuple[Key, float]]:
    found: list[tuple[Key, float]] = []
    for resource_metrics in data.resource_metrics if data else ():
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name in TENANT_COUNTER_NAMES:
                    assert metric.data.aggregation_temporality is temporality
                    for point in metric.data.data_points:
                        if temporality is AggregationTemporality.DELTA:
                            assert point.value > 0, point
                        key = (metric.name, frozenset(point.attributes.items()))
                        found.append((key, point.value))
    return found


def _runs(handlers: Sequence[OTelCallbackHandler], worker: int, stop: threading.Event) -> None:
    index = 0
    while not stop.is_set():
        handler = handlers[index % len(handlers)]
        run_id = f"w{worker}-{index}"
        with tenant_scope(f"t{(worker * 7 + index) % 20}"):
            handler.agent_start(AgentStartEvent("q", run_id))
            usage = {"input_tokens": 3, "output_tokens": 1}
            handler.llm_end(LLMEndEvent(model="m", output="x", usage=usage, run_id=run_id))
            handler.agent_end(AgentEndEvent(run_id, "x", 1.0, 1))
        index += 1
        time.sleep(0.0002)  # a busy service, not a spin: collections get the SDK's lock too


def test_flushes_racing_the_periodic_export_send_each_increment_once() -> None:
    sink = DeltaSink()
    periodic = PeriodicExportingMetricReader(sink, export_interval_millis=5)
    cumulative = InMemoryMetricReader()
    telemetry = configure_telemetry(
        otlp=False, prometheus_port=0, set_global=False, metric_readers=[periodic, cumulative]
    )
    handlers = [
        OTelCallbackHandler(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
        for _ in range(2)
    ]
    port = telemetry.prometheus_port or 0
    stop = threading.Event()
    errors: list[BaseException] = []

    def guarded(target: Any, *args: Any) -> threading.Thread:
        def run() -> None:
            try:
                target(*args)
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        return threading.Thread(target=run)

    def flush() -> None:  # what Telemetry.force_flush does to this reader, without its timeout
        while not stop.is_set():
            periodic.force_flush(timeout_millis=30_000)
            time.sleep(0.001)  # the SDK's collection lock is not fair: leave the scrape a turn

    def scrapes() -> None:
        while not stop.is_set():
            parse(scrape(port, openmetrics=True))  # asserts no series twice
            time.sleep(0.02)

    threads = [guarded(_runs, handlers, worker, stop) for worker in range(2)]
    threads += [guarded(flush), guarded(flush), guarded(scrapes)]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # interleave the threads as often as the interpreter can
    try:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while sink.exports < 100 and time.monotonic() < deadline and not errors:
            time.sleep(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        sys.setswitchinterval(switch)
    try:
        assert not errors, errors
        assert sink.exports >= 100
        # Nothing running now: the cumulative reader reads the final totals (draining what was
        # recorded last), then the delta reader sends what it has not sent yet.
        points = _points(cumulative.get_metrics_data(), AggregationTemporality.CUMULATIVE)
        totals = {key: value for key, value in points if value}
        periodic.force_flush(timeout_millis=30_000)
    finally:
        telemetry.shutdown()
    runs = {key: value for key, value in totals.items() if key[0] == semconv.AGENT_RUNS.name}
    assert len({dict(attributes)[semconv.TENANT_ID] for _, attributes in runs}) == 20
    assert sum(runs.values()) > 20
    assert sink.sums == totals
