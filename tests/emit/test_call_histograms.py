"""The run's two call histograms, aggregated in process and served by the reader hook: the same
points a real SDK histogram gives for the same values, per reader (cumulative and true deltas),
exemplars where a link is given, exact under threads, the SDK path where the hook cannot serve
them, and histogram families on the Prometheus exposition."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import AlwaysOnExemplarFilter, Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    HistogramDataPoint,
    InMemoryMetricReader,
    MetricsData,
)
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry, generate_latest

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.emit import tenant_hub
from symfonic_otel.emit.budget import cardinality_view
from symfonic_otel.emit.call_histograms import CallHistograms
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    LLMEndEvent,
    ToolCallStartEvent,
    ToolResultEvent,
)
from symfonic_otel.export.setup import configure_telemetry

CALLS = semconv.INVOKE_AGENT_INFERENCE_CALLS
TOOLS = semconv.INVOKE_AGENT_TOOL_CALLS
VALUES = (0, 1, 2, 3, 5, 8, 9, 64, 128, 129, 1000)
SETS = ({"gen_ai.agent.name": "a", "symfonic.run.outcome": "completed"}, {"gen_ai.agent.name": "b"})


def _points(data: MetricsData | None, name: str) -> list[HistogramDataPoint]:
    found: list[HistogramDataPoint] = []
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    found.extend(metric.data.data_points)  # type: ignore[arg-type]
    return found


def _shape(point: HistogramDataPoint) -> tuple[Any, ...]:
    return (
        dict(point.attributes or {}),
        point.count,
        point.sum,
        tuple(point.bucket_counts),
        tuple(point.explicit_bounds),
        point.min,
        point.max,
    )


@pytest.fixture
def two_readers() -> Iterator[tuple[InMemoryMetricReader, InMemoryMetricReader, CallHistograms]]:
    """A provider with a cumulative and a delta reader, and its in-process call histograms."""
    cumulative = InMemoryMetricReader()
    delta = InMemoryMetricReader(preferred_temporality={Histogram: AggregationTemporality.DELTA})
    provider = MeterProvider(metric_readers=[cumulative, delta], views=[cardinality_view()])
    histograms = tenant_hub.hub_for(provider).call_histograms
    assert histograms is not None
    yield cumulative, delta, histograms
    provider.shutdown()


each_temporality = pytest.mark.parametrize(
    "temporality",
    [AggregationTemporality.CUMULATIVE, AggregationTemporality.DELTA],
    ids=lambda t: t.name.lower(),
)


def test_points_equal_a_real_sdk_histogram_fed_the_same_values(
    two_readers: tuple[InMemoryMetricReader, InMemoryMetricReader, CallHistograms],
) -> None:
    cumulative, _, histograms = two_readers
    reference_reader = InMemoryMetricReader()
    reference = MeterProvider(metric_readers=[reference_reader])
    meter = reference.get_meter("reference")
    sdk_calls, sdk_tools = (
        meter.create_histogram(
            spec.name, unit=spec.unit, explicit_bucket_boundaries_advisory=list(spec.buckets)
        )
        for spec in (CALLS, TOOLS)
    )
    for index, value in enumerate(VALUES):
        attributes = SETS[index % 2]
        histograms.record(attributes, value, value * 2)
        sdk_calls.record(value, attributes)
        sdk_tools.record(value * 2, attributes)
    histograms.record(SETS[0], 7, None)  # tool calls not known: model calls only
    sdk_calls.record(7, SETS[0])
    ours, theirs = cumulative.get_metrics_data(), reference_reader.get_metrics_data()
    for spec in (CALLS, TOOLS):
        expected = sorted(map(_shape, _points(theirs, spec.name)), key=repr)
        assert sorted(map(_shape, _points(ours, spec.name)), key=repr) == expected
        assert len(expected) == 2
    metric = next(
        m
        for r in ours.resource_metrics  # type: ignore[union-attr]
        for s in r.scope_metrics
        for m in s.metrics
        if m.name == CALLS.name
    )
    assert (metric.unit, metric.description) == (CALLS.unit, CALLS.description)
    reference.shutdown()


def test_each_reader_gets_its_own_cumulative_or_delta_points(
    two_readers: tuple[InMemoryMetricReader, InMemoryMetricReader, CallHistograms],
) -> None:
    cumulative, delta, histograms = two_readers
    histograms.record(SETS[0], 3, 1)
    histograms.record(SETS[0], 5, 2)
    first = _points(delta.get_metrics_data(), CALLS.name)
    assert [(p.count, p.sum) for p in first] == [(2, 8)]
    assert _points(delta.get_metrics_data(), CALLS.name) == []  # nothing new: no delta point
    histograms.record(SETS[0], 2, 0)
    second = _points(delta.get_metrics_data(), CALLS.name)
    assert [(p.count, p.sum, p.min, p.max) for p in second] == [(1, 2, 2, 2)]
    # The start advances to the previous collection (the empty one, after the first).
    assert second[0].start_time_unix_nano > first[0].time_unix_nano
    totals = _points(cumulative.get_metrics_data(), CALLS.name)  # the delta reader took nothing
    assert [(p.count, p.sum, p.min, p.max) for p in totals] == [(3, 10, 2, 5)]
    again = _points(cumulative.get_metrics_data(), CALLS.name)
    assert [(p.count, p.start_time_unix_nano) for p in again] == [
        (3, totals[0].start_time_unix_nano)
    ]


def test_a_linked_value_is_its_bucket_s_exemplar_once_per_reader(
    two_readers: tuple[InMemoryMetricReader, InMemoryMetricReader, CallHistograms],
) -> None:
    cumulative, delta, histograms = two_readers
    histograms.record(SETS[0], 3, 1, (0xABC, 0x12))
    histograms.record(SETS[0], 100, 1)  # no link: no exemplar
    for reader in (cumulative, delta):
        (point,) = _points(reader.get_metrics_data(), CALLS.name)
        assert [(e.trace_id, e.span_id, e.value) for e in point.exemplars] == [(0xABC, 0x12, 3)]
    (point,) = _points(cumulative.get_metrics_data(), CALLS.name)
    assert point.exemplars == []  # as the SDK: an exemplar is served by the next collection


def test_threads_recording_while_readers_collect_lose_nothing(
    two_readers: tuple[InMemoryMetricReader, InMemoryMetricReader, CallHistograms],
    switch_often: None,
) -> None:
    cumulative, delta, histograms = two_readers
    threads, runs = 4, 2_000
    done = threading.Event()
    seen = [0]

    def collect() -> None:
        while not done.is_set():
            seen[0] += sum(p.count for p in _points(delta.get_metrics_data(), CALLS.name))

    def record() -> None:
        for _ in range(runs):
            histograms.record(SETS[0], 1, 1)

    collector = threading.Thread(target=collect)
    collector.start()
    workers = [threading.Thread(target=record) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    done.set()
    collector.join()
    seen[0] += sum(p.count for p in _points(delta.get_metrics_data(), CALLS.name))
    assert seen[0] == threads * runs
    (point,) = _points(cumulative.get_metrics_data(), CALLS.name)
    assert (point.count, point.sum) == (threads * runs, threads * runs)


def test_a_full_queue_is_folded_by_the_recording_thread() -> None:
    histograms = CallHistograms(queue_cap=4, max_sets=2)
    reader = InMemoryMetricReader()
    histograms.add_reader(reader, AggregationTemporality.CUMULATIVE)
    held = []
    for index in range(10):
        histograms.record({"n": index % 3}, 1, None)
        held.append(len(histograms._queue))
    assert max(held) == 4  # the queue holds up to its cap, then the next run folds it
    points = histograms.metrics(reader, AggregationTemporality.CUMULATIVE)[0].data.data_points
    by_set = {tuple(sorted(p.attributes.items())): p.count for p in points}  # type: ignore[union-attr]
    assert by_set == {(("n", 0),): 4, (("n", 1),): 3, ((semconv.METRIC_OVERFLOW, True),): 3}


@each_temporality
@pytest.mark.parametrize("other_scope", [True, False], ids=["other-scope", "alone"])
def test_values_early_handlers_put_in_the_sdk_are_summed_into_one_family_per_set(
    temporality: AggregationTemporality, other_scope: bool
) -> None:
    """Handlers built before their provider recorded into the SDK's instruments (the package's
    scope): each of their sets is summed with the in-process one into one point, as one SDK
    histogram fed all the values would give; another scope's same-named metric is left alone."""
    reader = InMemoryMetricReader(preferred_temporality={Histogram: temporality})
    resource = Resource({"service.name": "svc"}, schema_url="https://schema/r")
    provider = MeterProvider(
        metric_readers=[reader], resource=resource, exemplar_filter=AlwaysOnExemplarFilter()
    )
    histograms = tenant_hub.hub_for(provider).call_histograms
    assert histograms is not None
    advice = {"explicit_bucket_boundaries_advisory": list(CALLS.buckets)}
    if other_scope:  # the same name in another scope, collected first
        other = provider.get_meter("elsewhere").create_histogram(CALLS.name, CALLS.unit, **advice)
        other.record(1000, SETS[0])
    scope = provider.get_meter(semconv.SCOPE_NAME, "1.0", schema_url="https://schema/1")
    if other_scope:  # and another of the package's own metrics
        scope.create_counter("symfonic.other").add(1)
    early = scope.create_histogram(CALLS.name, CALLS.unit, CALLS.description, **advice)
    reference_reader = InMemoryMetricReader()
    reference = MeterProvider(metric_readers=[reference_reader])
    sdk = reference.get_meter("reference").create_histogram(CALLS.name, **advice)
    for value, attributes in ((2, SETS[0]), (300, SETS[0]), (4, SETS[1])):
        early.record(value, attributes)
        sdk.record(value, attributes)
    histograms.record(SETS[0], 5, 7, (0xABC, 0x12))
    histograms.record({"only": "ours"}, 1, None)
    sdk.record(5, SETS[0])
    sdk.record(1, {"only": "ours"})

    data = reader.get_metrics_data()
    assert data is not None
    (resource_metrics,) = data.resource_metrics
    assert (resource_metrics.resource, resource_metrics.schema_url) == (
        resource,
        "https://schema/r",
    )
    found = {
        (scope.scope.name, scope.schema_url, metric.name): metric
        for scope in resource_metrics.scope_metrics
        for metric in scope.metrics
    }
    calls = found[(semconv.SCOPE_NAME, "https://schema/1", CALLS.name)]
    assert (calls.unit, calls.description) == (CALLS.unit, CALLS.description)
    assert calls.data.aggregation_temporality == temporality  # type: ignore[union-attr]
    points = calls.data.data_points  # type: ignore[union-attr]
    expected = _points(reference_reader.get_metrics_data(), CALLS.name)
    assert sorted(map(_shape, points), key=repr) == sorted(map(_shape, expected), key=repr)
    by_set = {tuple(sorted((p.attributes or {}).items())): p for p in points}
    summed, sdk_only = (
        by_set[tuple(sorted(SETS[0].items()))],
        by_set[tuple(sorted(SETS[1].items()))],
    )
    ours_only = by_set[(("only", "ours"),)]
    # The summed set spans both: from the earlier start to the later collection time.
    assert summed.start_time_unix_nano == min(
        ours_only.start_time_unix_nano, sdk_only.start_time_unix_nano
    )
    assert summed.time_unix_nano == max(ours_only.time_unix_nano, sdk_only.time_unix_nano)
    exemplars = sorted((e.value, e.trace_id or 0) for e in summed.exemplars)
    assert exemplars == [(2, 0), (5, 0xABC), (300, 0)]
    if other_scope:
        (elsewhere,) = found[("elsewhere", "", CALLS.name)].data.data_points  # type: ignore[union-attr]
        assert (elsewhere.count, elsewhere.sum) == (1, 1000)
    assert [name for *_, name in found].count(CALLS.name) == 1 + other_scope
    # The tool calls had no SDK instrument: the in-process family is added as it is.
    (tools,) = _points(data, TOOLS.name)
    assert (dict(tools.attributes or {}), tools.count, tools.sum) == (SETS[0], 1, 7)
    provider.shutdown()
    reference.shutdown()


def _turn(handler: OTelCallbackHandler, run_id: str) -> None:
    handler.agent_start(AgentStartEvent("q", run_id))
    for index in range(3):
        handler.llm_end(LLMEndEvent("gpt-4o", "x", {}, run_id=run_id, node_name="react"))
        call_id = f"{run_id}-{index}"
        handler.tool_call_start(ToolCallStartEvent(call_id, "search", {"q": 1}, run_id=run_id))
        handler.tool_result(ToolResultEvent(call_id, "search", "ok", run_id=run_id))
    handler.agent_end(AgentEndEvent(run_id, "an answer", 10.0, 3))


def test_where_a_view_changes_them_they_stay_sdk_instruments() -> None:
    reader = InMemoryMetricReader()
    view = View(instrument_name=TOOLS.name, aggregation=ExplicitBucketHistogramAggregation((1, 10)))
    provider = MeterProvider(metric_readers=[reader], views=[view])
    handler = OTelCallbackHandler(meter_provider=provider, tracer_provider=TracerProvider())
    assert tenant_hub.hub_for(provider).call_histograms is None
    _turn(handler, "r1")
    data = reader.get_metrics_data()
    (tools,) = _points(data, TOOLS.name)
    assert (tools.count, tools.sum, tuple(tools.explicit_bounds)) == (1, 3, (1, 10))
    (calls,) = _points(data, CALLS.name)
    assert (calls.count, calls.sum, tuple(calls.explicit_bounds)) == (1, 3, CALLS.buckets)
    provider.shutdown()


def test_the_prometheus_expositions_show_histogram_families() -> None:
    registry = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    handler = OTelCallbackHandler(meter_provider=provider, tracer_provider=TracerProvider())
    _turn(handler, "r1")
    text = generate_latest(registry).decode()
    provider.shutdown()
    telemetry = configure_telemetry(set_global=False, otlp=False, prometheus_port=0)
    try:
        handler = OTelCallbackHandler(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
        _turn(handler, "r2")
        url = f"http://127.0.0.1:{telemetry.prometheus_port}/metrics"
        with urllib.request.urlopen(url, timeout=30) as response:
            served = response.read().decode()
    finally:
        telemetry.shutdown(timeout_millis=5_000)
    for exposition in (text, served):
        lines = exposition.splitlines()
        for family in ("gen_ai_invoke_agent_inference_calls", "gen_ai_invoke_agent_tool_calls"):
            assert f"# TYPE {family} histogram" in lines
            assert any(
                line.startswith(f"{family}_count{{") and line.endswith(" 1.0") for line in lines
            )
            assert any(
                line.startswith(f"{family}_sum{{") and line.endswith(" 3.0") for line in lines
            )
            assert any(
                line.startswith(f"{family}_bucket{{") and 'le="4"' in line and line.endswith(" 1.0")
                for line in lines
            )
            assert any(
                line.startswith(f"{family}_bucket{{") and 'le="2"' in line and line.endswith(" 0.0")
                for line in lines
            )


_EARLY_AND_LATE = """
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from symfonic_otel import OTelCallbackHandler
from tests.emit.test_call_histograms import _turn

early = OTelCallbackHandler(tracer_provider=TracerProvider())
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
late = OTelCallbackHandler(tracer_provider=TracerProvider())
_turn(early, "a")
_turn(late, "b")
data = reader.get_metrics_data()
print([
    (m.name, [(p.count, p.sum) for p in m.data.data_points])
    for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics
    if m.name == "gen_ai.invoke_agent.inference_calls"
])
"""


def test_a_handler_built_before_its_provider_shares_one_family_with_later_ones() -> None:
    """The early handler records into the SDK's instruments (no provider was set when it was
    built), the later one in process: one family, their values summed per set (a process of
    its own: the global provider is set once)."""
    done = subprocess.run(
        [sys.executable, "-c", _EARLY_AND_LATE], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[('gen_ai.invoke_agent.inference_calls', [(2, 6)])]"


@each_temporality
def test_exemplars_carry_the_fold_time_and_pass_the_trace_filter(
    temporality: AggregationTemporality,
) -> None:
    """Both histograms' exemplars name the run's span, carry no filtered attributes and the
    time the value was folded; a trace the filter refuses gives none."""
    histograms = CallHistograms(trace_filter=lambda: lambda trace: trace != 0xBAD)
    reader = InMemoryMetricReader()
    histograms.add_reader(reader, temporality)
    before = time.time_ns()
    histograms.record(SETS[0], 3, 4, (0xABC, 0x12))
    histograms.record(SETS[0], 100, 100, (0xBAD, 0x13))
    histograms.fold()
    after = time.time_ns()
    metrics = histograms.metrics(reader, temporality)
    assert [m.data.aggregation_temporality for m in metrics] == [temporality] * 2  # type: ignore[union-attr]
    for metric, value in zip(metrics, (3, 4), strict=True):
        (point,) = metric.data.data_points  # type: ignore[union-attr]
        assert point.count == 2
        (exemplar,) = point.exemplars
        assert (exemplar.trace_id, exemplar.span_id, exemplar.value) == (0xABC, 0x12, value)
        assert exemplar.filtered_attributes == {}
        assert before <= exemplar.time_unix_nano <= after


def test_without_exemplars_no_point_carries_one() -> None:
    reader = InMemoryMetricReader()
    for histograms, expected in ((CallHistograms(), 1), (CallHistograms(exemplars=False), 0)):
        histograms.add_reader(reader, AggregationTemporality.CUMULATIVE)
        histograms.record(SETS[0], 3, 4, (0xABC, 0x12))
        for metric in histograms.metrics(reader, AggregationTemporality.CUMULATIVE):
            (point,) = metric.data.data_points  # type: ignore[union-attr]
            assert len(point.exemplars) == expected


@each_temporality
def test_a_set_s_start_is_the_fold_or_collection_before_its_first_value(
    temporality: AggregationTemporality,
) -> None:
    """A set's start is a time before its first value and after the previous collection (its
    first cumulative point, every delta point)."""
    made = time.time_ns()
    histograms = CallHistograms()
    reader = InMemoryMetricReader()
    histograms.add_reader(reader, temporality)
    histograms.record(SETS[0], 1, 1)
    (first,) = histograms.metrics(reader, temporality)[0].data.data_points  # type: ignore[union-attr]
    assert made <= first.start_time_unix_nano <= first.time_unix_nano
    histograms.record(SETS[1], 2, 2)
    points = histograms.metrics(reader, temporality)[0].data.data_points  # type: ignore[union-attr]
    (later,) = [p for p in points if p.attributes == SETS[1]]
    assert first.start_time_unix_nano < later.start_time_unix_nano <= later.time_unix_nano
    if temporality is AggregationTemporality.DELTA:  # since the reader's previous collection
        assert later.start_time_unix_nano == first.time_unix_nano
    else:  # since the fold before its first value, within the previous collection
        assert later.start_time_unix_nano <= first.time_unix_nano


@each_temporality
def test_a_reader_not_followed_before_gets_everything_so_far_once(
    temporality: AggregationTemporality,
) -> None:
    """A reader first seen at its collection gets every value folded before, in both histograms
    and with its temporality; a delta reader then gets only what is new."""
    histograms = CallHistograms()
    histograms.record(SETS[0], 3, 7)
    histograms.record(SETS[1], 5, None)
    reader = InMemoryMetricReader()
    metrics = histograms.metrics(reader, temporality)
    shapes = {
        m.name: sorted((p.count, p.sum) for p in m.data.data_points)  # type: ignore[union-attr]
        for m in metrics
    }
    assert shapes == {CALLS.name: [(1, 3), (1, 5)], TOOLS.name: [(1, 7)]}
    assert {m.data.aggregation_temporality for m in metrics} == {temporality}  # type: ignore[union-attr]
    histograms.record(SETS[0], 1, None)
    again = histograms.metrics(reader, temporality)
    counts = sorted(p.count for p in again[0].data.data_points)  # type: ignore[union-attr]
    assert counts == ([1] if temporality is AggregationTemporality.DELTA else [1, 2])


@pytest.mark.parametrize("tools", [None, 7], ids=["tool-calls-unknown", "tool-calls-known"])
def test_on_the_sdk_path_a_run_end_keeps_its_set_and_its_exemplar(tools: int | None) -> None:
    """Where the hook cannot serve them, a run's counts still carry the agent and outcome and,
    given the run's span, an exemplar leading to it; unknown tool calls record no tool point."""
    reader = InMemoryMetricReader()
    view = View(instrument_name=TOOLS.name, aggregation=ExplicitBucketHistogramAggregation((1, 10)))
    provider = MeterProvider(
        metric_readers=[reader], views=[view], exemplar_filter=AlwaysOnExemplarFilter()
    )
    emitter = MetricEmitter(provider.get_meter("t"), "ops", meter_provider=provider)
    assert emitter.call_histograms is None
    emitter.loops.run_calls("acme", "completed", 4, tools, (0xABC, 0xDEF))
    data = reader.get_metrics_data()
    expected = {semconv.GEN_AI_AGENT_NAME: "ops", semconv.RUN_OUTCOME: "completed"}
    shown = [(CALLS.name, 4)] + ([] if tools is None else [(TOOLS.name, tools)])
    for name, value in shown:
        (point,) = _points(data, name)
        assert (dict(point.attributes or {}), point.count, point.sum) == (expected, 1, value)
        assert [(e.value, e.trace_id, e.span_id) for e in point.exemplars] == [
            (value, 0xABC, 0xDEF)
        ]
    if tools is None:
        assert _points(data, TOOLS.name) == []
    provider.shutdown()
