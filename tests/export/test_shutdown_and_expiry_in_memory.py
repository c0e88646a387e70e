"""Open runs at shutdown and runs past their TTL, through ``configure_telemetry`` with in-memory
exporters: what the OTLP tests check against a receiver, guarded without one.

* ``Telemetry.shutdown`` ends every open run of its handlers as ``abandoned`` before the final
  export: the run spans, ``symfonic.agent.runs{outcome=abandoned}``, ``orphaned_runs``, the
  active-runs gauge back at zero, and the count in the shutdown log line.
* It leaves the runs of handlers that record into other providers open.
* A run past its TTL is closed at the next metric collection, with no event of any kind.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.metrics.export import (
    InMemoryMetricReader,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from structlog.testing import capture_logs

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.export.setup import Telemetry, configure_telemetry
from tests.support.configured_handler import handler_on, shut_one_of_two


class _LastExport(MetricExporter):
    """Keeps the latest export: the one the shutdown makes last."""

    def __init__(self) -> None:
        super().__init__()
        self.latest: MetricsData | None = None

    def export(self, metrics_data: MetricsData, timeout_millis: float = 0, **kw: Any) -> Any:
        self.latest = metrics_data
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 0) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 0, **kw: Any) -> None:
        return None


def _total(data: MetricsData | None, name: str, **where: object) -> float:
    total = 0.0
    for resource_metrics in data.resource_metrics if data else ():
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name != name:
                    continue
                for point in metric.data.data_points:
                    attributes = dict(point.attributes or {})
                    if all(attributes.get(k) == v for k, v in where.items()):
                        total += point.value  # type: ignore[union-attr]
    return total


def _configure(spans: InMemorySpanExporter, readers: Sequence[Any]) -> Telemetry:
    return configure_telemetry(
        otlp=False,
        set_global=False,
        span_processors=[SimpleSpanProcessor(spans)],
        metric_readers=list(readers),
    )


def _abandoned(spans: InMemorySpanExporter) -> list[str]:
    return sorted(
        str((s.attributes or {})[semconv.RUN_ID])
        for s in spans.get_finished_spans()
        if (s.attributes or {}).get(semconv.RUN_OUTCOME) == "abandoned"
    )


def test_open_runs_at_shutdown_are_exported_as_abandoned_and_counted() -> None:
    spans, metrics = InMemorySpanExporter(), _LastExport()
    reader = PeriodicExportingMetricReader(metrics, export_interval_millis=3_600_000)
    with capture_logs() as logs:
        telemetry = _configure(spans, [reader])
        handler = handler_on(telemetry, agent_name="support")
        for index in range(5):
            handler.agent_start(AgentStartEvent("q", f"open-{index}"))
        handler.agent_start(AgentStartEvent("q", "finished"))
        handler.agent_end(AgentEndEvent("finished", "an answer", 1.0, 1))
        assert telemetry.shutdown(timeout_millis=10_000) is True

    assert _abandoned(spans) == [f"open-{index}" for index in range(5)]
    assert handler.open_runs == 0
    latest = metrics.latest
    assert _total(latest, semconv.ORPHANED_RUNS.name) == 5
    assert _total(latest, semconv.ACTIVE_RUNS.name) == 0
    assert _total(latest, semconv.AGENT_RUNS.name, **{semconv.RUN_OUTCOME: "abandoned"}) == 5
    assert _total(latest, semconv.AGENT_RUNS.name, **{semconv.RUN_OUTCOME: "completed"}) == 1
    [summary] = [e for e in logs if e["event"] == "symfonic_otel.telemetry_shutdown"]
    assert summary["abandoned_runs"] == 5


def test_shutdown_leaves_the_runs_of_handlers_on_other_providers_open() -> None:
    mine_spans, their_spans = InMemorySpanExporter(), InMemorySpanExporter()
    first = _configure(mine_spans, [InMemoryMetricReader()])
    second = _configure(their_spans, [InMemoryMetricReader()])
    try:
        theirs = shut_one_of_two(first, second)
        assert (_abandoned(mine_spans), _abandoned(their_spans)) == (["mine"], [])
    finally:
        second.shutdown(timeout_millis=5_000)
    assert theirs.open_runs == 0
    assert _abandoned(their_spans) == ["theirs"]


def test_runs_past_their_ttl_close_at_the_next_collection_without_new_traffic() -> None:
    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    telemetry = _configure(spans, [reader])
    try:
        handler = handler_on(telemetry, run_ttl_s=0.05)
        for index in range(3):
            handler.agent_start(AgentStartEvent("q", f"stale-{index}"))
        data = reader.get_metrics_data()  # before the TTL: nothing closes
        assert handler.open_runs == 3 and _total(data, semconv.ACTIVE_RUNS.name) == 3
        time.sleep(0.1)
        data = reader.get_metrics_data()  # no event since: the collection sweeps
        assert handler.open_runs == 0
        assert _abandoned(spans) == [f"stale-{index}" for index in range(3)]
        assert _total(data, semconv.ORPHANED_RUNS.name) == 3
        assert _total(data, semconv.ACTIVE_RUNS.name) == 0
    finally:
        telemetry.shutdown(timeout_millis=5_000)
