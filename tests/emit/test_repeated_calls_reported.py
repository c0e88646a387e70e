"""``symfonic.agent.repeated_tool_calls`` counted per run at each collection: every call past
the first, while the run still runs, after it ended, under threads, with memory bounded when no
reader collects."""

from __future__ import annotations

import threading

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.emit import loop_metrics
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, ToolCallStartEvent, ToolResultEvent

REPEATED = semconv.REPEATED_TOOL_CALLS.name


def _total(reader: InMemoryMetricReader) -> float:
    data = reader.get_metrics_data()
    return sum(
        point.value  # type: ignore[union-attr]
        for resource in data.resource_metrics  # type: ignore[union-attr]
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == REPEATED
        for point in metric.data.data_points
    )


def _call(handler: OTelCallbackHandler, run_id: str, call_id: str) -> None:
    handler.tool_call_start(ToolCallStartEvent(call_id, "search", {"q": 1}, run_id=run_id))
    handler.tool_result(ToolResultEvent(call_id, "search", "ok", run_id=run_id))


def _handler(sdk: tuple[InMemoryMetricReader, MeterProvider]) -> OTelCallbackHandler:
    return OTelCallbackHandler(meter_provider=sdk[1], tracer_provider=TracerProvider())


def test_every_call_past_the_first_is_counted_while_the_run_runs(
    sdk: tuple[InMemoryMetricReader, MeterProvider],
) -> None:
    handler = _handler(sdk)
    handler.agent_start(AgentStartEvent("q", "r1"))
    totals = []
    for index in range(4):
        _call(handler, "r1", f"c{index}")
        totals.append(_total(sdk[0]))
    assert totals == [0, 1, 2, 3]  # each in the next collection, the run still open
    handler.agent_end(AgentEndEvent("r1", "x", 1.0, 1))
    assert _total(sdk[0]) == 3


def test_a_run_ended_before_any_collection_is_counted_whole(
    sdk: tuple[InMemoryMetricReader, MeterProvider],
) -> None:
    handler = _handler(sdk)
    for run in range(3):
        handler.agent_start(AgentStartEvent("q", f"r{run}"))
        for index in range(run + 2):
            _call(handler, f"r{run}", f"r{run}-c{index}")
        handler.agent_end(AgentEndEvent(f"r{run}", "x", 1.0, 1))
    assert _total(sdk[0]) == 1 + 2 + 3


def test_threads_repeating_while_a_reader_collects_count_exactly(
    sdk: tuple[InMemoryMetricReader, MeterProvider], switch_often: None
) -> None:
    handler = _handler(sdk)
    handler.agent_start(AgentStartEvent("q", "r1"))
    threads, calls = 4, 300
    done = threading.Event()
    seen: list[float] = []

    def collect() -> None:
        while not done.is_set():
            seen.append(_total(sdk[0]))

    def repeat(worker: int) -> None:
        for index in range(calls):
            _call(handler, "r1", f"w{worker}-{index}")

    collector = threading.Thread(target=collect)
    collector.start()
    workers = [threading.Thread(target=repeat, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    done.set()
    collector.join()
    assert _total(sdk[0]) == threads * calls - 1  # one signature: every call but the first
    assert seen == sorted(seen)  # a cumulative counter never goes back


def test_without_collections_the_queue_stays_bounded(
    sdk: tuple[InMemoryMetricReader, MeterProvider], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loop_metrics, "REPEATS_CAP", 8)
    handler = _handler(sdk)
    for run in range(50):  # runs left open: each stays queued until a report
        handler.agent_start(AgentStartEvent("q", f"r{run}"))
        _call(handler, f"r{run}", f"r{run}-a")
        _call(handler, f"r{run}", f"r{run}-b")
    assert len(handler._core.metrics.loops._repeats) <= 9
    assert _total(sdk[0]) == 50


class _RacingRun:
    """A run whose next repeat lands exactly while a report reads its count: the recording
    thread's steps of ``core.loops.tool_call`` run inside the read."""

    def __init__(self, loops: loop_metrics.LoopMetrics) -> None:
        self.reported = 0
        self.queued = True  # queued by its first repeat
        self._repeated = 1
        self._loops = loops
        self._raced = False

    @property
    def repeated(self) -> int:
        value = self._repeated
        if not self._raced:
            self._raced = True
            self._repeated += 1  # the racing repeat, after the value was read
            if not self.queued:
                self.queued = True
                self._loops.repeating(self, "acme")
        return value


def test_a_repeat_landing_while_its_run_is_reported_is_counted(
    sdk: tuple[InMemoryMetricReader, MeterProvider],
) -> None:
    handler = _handler(sdk)
    loops = handler._core.metrics.loops
    run = _RacingRun(loops)
    loops.repeating(run, "acme")
    assert _total(sdk[0]) == 2
    assert not run.queued


def test_a_tenant_dropped_takes_its_repeated_calls_series_with_it() -> None:
    """The repeated-calls series belongs to its tenant: freeing the tenant forgets it."""
    provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    emitter = MetricEmitter(provider.get_meter("t"), "ops", meter_provider=provider)
    emitter.loops.repeated_tool_calls("acme", 3)
    assert [s.total for s in emitter.counters.snapshot(REPEATED)] == [3]
    emitter.counters.drop("acme")
    assert emitter.counters.snapshot(REPEATED) == []
    provider.shutdown()
