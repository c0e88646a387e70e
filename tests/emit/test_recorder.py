"""Deferred recording: nothing queued is lost, the queue stays bounded, handlers share a hook."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from symfonic_otel import __version__
from symfonic_otel.emit.recorder import DeferredRecorder, recorder_for
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def test_queue_is_bounded_and_applies_oldest_inline_when_full() -> None:
    applied: list[float] = []

    class Histogram:
        def record(self, value: float, attributes: Mapping[str, Any] | None = None) -> None:
            applied.append(value)

    recorder = DeferredRecorder(cap=3)
    for value in range(5):
        recorder.record(Histogram(), float(value), {})
    assert recorder.pending == 3
    assert applied == [0.0, 1.0]
    assert recorder.drain() == 3
    assert applied == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert recorder.pending == 0


def test_a_pair_is_queued_in_order_and_keeps_the_queue_within_its_cap() -> None:
    applied: list[tuple[str, float]] = []

    class Histogram:
        def __init__(self, name: str) -> None:
            self.name = name

        def record(self, value: float, attributes: Mapping[str, Any] | None = None) -> None:
            applied.append((self.name, value))

    first, second = Histogram("first"), Histogram("second")
    recorder = DeferredRecorder(cap=3)
    recorder.record_pair(first, 1.0, second, 2.0, {})
    recorder.record_pair(first, 3.0, second, 4.0, {})
    assert recorder.pending == 3
    assert applied == [("first", 1.0)]
    assert recorder.drain() == 3
    assert applied == [("first", 1.0), ("second", 2.0), ("first", 3.0), ("second", 4.0)]


def test_a_failing_measurement_does_not_stall_the_queue() -> None:
    applied: list[float] = []

    class Histogram:
        def record(self, value: float, attributes: Mapping[str, Any] | None = None) -> None:
            if value == 1.0:
                raise ValueError("bad")
            applied.append(value)

    recorder = DeferredRecorder()
    for value in (0.0, 1.0, 2.0):
        recorder.record(Histogram(), value, {})
    recorder.drain()
    assert applied == [0.0, 2.0]
    assert recorder.failed == 1


def test_collection_applies_everything_queued(telemetry: InMemoryTelemetry) -> None:
    first = telemetry.handler(agent_name="a")
    second = telemetry.handler(agent_name="b")
    meter = telemetry.meter_provider.get_meter("symfonic_otel", __version__)
    assert recorder_for(meter).pending == 0
    for handler in (first, second):
        for i in range(10):
            handler.agent_start(AgentStartEvent("q", f"r{i}"))
            handler.agent_end(AgentEndEvent(f"r{i}", "x", 1.0, 1))
    assert recorder_for(meter).pending > 0  # queued, not yet applied
    assert telemetry.value("symfonic.agent.runs", {"gen_ai.agent.name": "a"}) == 10
    assert telemetry.value("symfonic.agent.runs", {"gen_ai.agent.name": "b"}) == 10
    assert recorder_for(meter).pending == 0


# --- counters are summed per series and applied once per collection ---------------------------


class _Counter:
    def __init__(self) -> None:
        self.calls: list[tuple[float, Mapping[str, Any]]] = []

    def add(self, amount: float, attributes: Mapping[str, Any] | None = None) -> None:
        self.calls.append((amount, attributes or {}))


def test_counter_increments_are_summed_per_series_and_applied_once() -> None:
    counter, other = _Counter(), _Counter()
    a, b = {"k": "a"}, {"k": "b"}
    recorder = DeferredRecorder()
    for _ in range(100):
        recorder.add(counter, 1, a)
        recorder.add(counter, 2, b)
        recorder.add(other, 1, a)  # same attributes, other instrument: its own series
    assert recorder.pending == 3
    assert recorder.drain() == 3
    assert sorted((v, dict(attrs)) for v, attrs in counter.calls) == [
        (100, {"k": "a"}),
        (200, {"k": "b"}),
    ]
    assert other.calls == [(100, {"k": "a"})]
    assert recorder.pending == 0 and recorder.drain() == 0


def test_counter_series_are_bounded_and_applied_inline_past_the_cap() -> None:
    counter = _Counter()
    recorder = DeferredRecorder(series_cap=2)
    attribute_sets = [{"k": str(i)} for i in range(4)]
    for attributes in attribute_sets:
        recorder.add(counter, 1, attributes)
    assert recorder.pending == 2
    assert [(v, dict(attrs)) for v, attrs in counter.calls] == [(1, {"k": "2"}), (1, {"k": "3"})]
    recorder.drain()
    assert len(counter.calls) == 4


def test_a_counter_failing_inline_past_the_cap_is_counted_each_time() -> None:
    class Failing:
        def add(self, amount: float, attributes: Mapping[str, Any] | None = None) -> None:
            raise ValueError("bad")

    recorder = DeferredRecorder(series_cap=1)
    recorder.add(_Counter(), 1, {"k": "held"})
    for index in range(2):
        recorder.add(Failing(), 1, {"k": str(index)})  # past the cap: applied inline, fails
    assert recorder.failed == 2 and recorder.pending == 1


def _delta_telemetry() -> tuple[Any, Any]:
    from opentelemetry.sdk.metrics import (
        Counter,
        Histogram,
        MeterProvider,
        ObservableCounter,
        UpDownCounter,
    )
    from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader

    reader = InMemoryMetricReader(
        preferred_temporality={
            Counter: AggregationTemporality.DELTA,
            ObservableCounter: AggregationTemporality.DELTA,  # the per-tenant counters
            UpDownCounter: AggregationTemporality.DELTA,
            Histogram: AggregationTemporality.DELTA,
        }
    )
    return reader, MeterProvider(metric_readers=[reader])


def _runs_total(data: Any) -> float:
    total = 0.0
    if data is None:  # the SDK reports nothing for an interval without data points
        return total
    for resource_metrics in data.resource_metrics:
        for scope in resource_metrics.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "symfonic.agent.runs":
                    total += sum(point.value for point in metric.data.data_points)
    return total


def test_summed_counters_are_correct_under_delta_temporality() -> None:
    from symfonic_otel import OTelCallbackHandler

    reader, provider = _delta_telemetry()
    handler = OTelCallbackHandler(meter_provider=provider)
    for batch, runs in enumerate((3, 5, 0, 2)):
        for i in range(runs):
            run_id = f"r{batch}-{i}"
            handler.agent_start(AgentStartEvent("q", run_id))
            handler.agent_end(AgentEndEvent(run_id, "x", 1.0, 1))
        # Each collection reports exactly the runs of its own interval.
        assert _runs_total(reader.get_metrics_data()) == runs
    provider.shutdown()


def test_cumulative_totals_span_collections(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    for batch in range(3):
        for i in range(4):
            handler.agent_start(AgentStartEvent("q", f"r{batch}-{i}"))
            handler.agent_end(AgentEndEvent(f"r{batch}-{i}", "x", 1.0, 1))
        assert telemetry.value("symfonic.agent.runs") == 4 * (batch + 1)
        assert telemetry.value("symfonic.agent.active_runs") == 0
        assert telemetry.value("gen_ai.invoke_agent.duration") == 4 * (batch + 1)


def test_nothing_pending_is_lost_at_shutdown() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        MetricExporter,
        MetricExportResult,
        PeriodicExportingMetricReader,
    )

    from symfonic_otel import OTelCallbackHandler

    exported: list[float] = []

    class Capture(MetricExporter):
        def export(self, metrics_data: Any, timeout_millis: float = 0, **kw: Any) -> Any:
            exported.append(_runs_total(metrics_data))
            return MetricExportResult.SUCCESS

        def force_flush(self, timeout_millis: float = 0) -> bool:
            return True

        def shutdown(self, timeout_millis: float = 0, **kw: Any) -> None:
            return None

    reader = PeriodicExportingMetricReader(Capture(), export_interval_millis=3_600_000)
    provider = MeterProvider(metric_readers=[reader])
    handler = OTelCallbackHandler(meter_provider=provider)
    for i in range(7):
        handler.agent_start(AgentStartEvent("q", f"r{i}"))
        handler.agent_end(AgentEndEvent(f"r{i}", "x", 1.0, 1))
    provider.shutdown()  # the final collection drains the pending sums first
    assert exported and exported[-1] == 7


def test_handlers_created_before_the_global_provider_still_drain() -> None:
    """Two handlers on the global proxy meter, then a provider is set: both hooks drain."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from symfonic_otel import OTelCallbackHandler
        from symfonic_otel.events import AgentEndEvent, AgentStartEvent

        first, second = OTelCallbackHandler(agent_name="a"), OTelCallbackHandler(agent_name="b")
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        for handler in (first, second):
            handler.agent_start(AgentStartEvent("q", "r"))
            handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
        data = reader.get_metrics_data()
        runs = {}
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == "gen_ai.invoke_agent.duration":  # applied by the hooks
                        for p in m.data.data_points:
                            agent = dict(p.attributes)["gen_ai.agent.name"]
                            runs[agent] = runs.get(agent, 0) + p.count
        assert runs == {"a": 1, "b": 1}, runs
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


class _Housekeeping:
    def __init__(self, fails: bool = False) -> None:
        self.runs = 0
        self.fails = fails

    def run(self) -> None:
        self.runs += 1
        if self.fails:
            raise RuntimeError("housekeeping failed")


def test_housekeeping_runs_at_every_collection_while_its_object_lives_past_failures() -> None:
    recorder = DeferredRecorder()
    gone, failing, kept = _Housekeeping(), _Housekeeping(fails=True), _Housekeeping()
    recorder.on_collect(gone.run)
    recorder.on_collect(failing.run)
    recorder.on_collect(kept.run)
    del gone  # its task goes with it; the ones registered after it still run
    for _ in range(2):
        recorder.collect()
    assert (failing.runs, kept.runs) == (2, 2)
    assert recorder.failed == 2  # one per failed run, and the collection went on


def test_a_counter_failing_at_the_drain_is_counted_and_the_others_still_applied() -> None:
    class Failing:
        def add(self, amount: float, attributes: Mapping[str, Any] | None = None) -> None:
            raise ValueError("bad")

    counter = _Counter()
    recorder = DeferredRecorder()
    recorder.add(Failing(), 1, {"k": "a"})
    recorder.add(counter, 2, {"k": "b"})
    assert recorder.drain() == 2
    assert counter.calls == [(2, {"k": "b"})]
    assert recorder.failed == 1
