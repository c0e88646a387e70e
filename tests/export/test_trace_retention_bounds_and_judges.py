"""Outcome retention in process: byte and span bounds, roots parked for a judge, failures, counters.

Real SDK providers and spans; the judge is the registration protocol of
``emit.retention_marks`` (what the span processor implements); counters are read through a real
``MeterProvider`` with an ``InMemoryMetricReader``.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, TraceFlags
from structlog.testing import capture_logs

from symfonic_otel import OutcomeRetentionSpanProcessor, semconv
from symfonic_otel._version import __version__
from symfonic_otel.emit.retention_marks import keep_trace, trace_judged
from symfonic_otel.export import retention
from symfonic_otel.export.retention_rules import SPAN_OVERHEAD_BYTES
from tests.support.retention_rig import Judge, Recorder, Rig, dropped_id, kept_id

# --- the byte estimate and the bounds ---------------------------------------------------------


def test_a_held_span_weighs_its_overhead_its_attributes_and_its_string_values() -> None:
    rig = Rig(ratio=0.0)
    root = rig.root()
    rig.child(root, text="abcd", count=3, flag=True).end()
    assert rig.retention.held_bytes == SPAN_OVERHEAD_BYTES + 3 * 100 + 4
    with_events = rig.child(root)
    with_events.add_event("e1", {"note": "xy", "n": 1})
    with_events.add_event("e2")
    with_events.end()
    second = SPAN_OVERHEAD_BYTES + (400 + 2 * 100 + 2) + 400
    assert rig.retention.held_bytes == SPAN_OVERHEAD_BYTES + 3 * 100 + 4 + second
    assert rig.retention.held_spans == 2
    root.end()
    assert rig.retention.held_bytes == 0 and rig.retention.held_spans == 0


def _open_with_one_span(rig: Rig, **attrs: Any) -> Any:
    root = rig.root()
    rig.child(root, **attrs).end()
    return root


def test_the_byte_bound_holds_exactly_its_bytes_and_decides_the_oldest_one_byte_past() -> None:
    one = SPAN_OVERHEAD_BYTES + 100 + 10
    rig = Rig(ratio=0.0, max_held_bytes=2 * one + 1)
    first = _open_with_one_span(rig, text="x" * 10)
    second = _open_with_one_span(rig, text="x" * 11)
    assert rig.retention.held_bytes == 2 * one + 1 and rig.retention.decisions == {}
    third = rig.root()  # a root's start adds no bytes: at the bound nothing is decided
    assert rig.retention.decisions == {} and rig.retention.held_traces == 3
    rig.child(third, text="x" * 10).end()  # past the bound: the oldest goes, only it
    assert rig.retention.decisions == {("dropped", "capacity"): 1}
    assert rig.retention.held_bytes == 2 * one + 1
    assert rig.retention.held_spans == 2 and rig.retention.held_traces == 2
    assert rig.retention.dropped_spans == {"unsampled": 0, "decided_early": 1}
    assert not rig.retention.will_export(first.get_span_context().trace_id)
    for root in (first, second, third):
        root.end()
    assert rig.retention.dropped_spans == {"unsampled": 4, "decided_early": 2}


def test_every_trace_decided_at_once_past_the_bound_is_exported_when_kept() -> None:
    one = SPAN_OVERHEAD_BYTES + 100 + 10
    rig = Rig(ratio=0.0, max_held_bytes=2 * one)
    marked = [_open_with_one_span(rig, text="x" * 10) for _ in range(2)]
    for root in marked:
        keep_trace(root.get_span_context())
    _open_with_one_span(rig, text="x" * (10 + 1000))  # both older traces must go
    assert rig.retention.decisions == {("kept", "capacity"): 2}
    assert rig.traces() == {root.get_span_context().trace_id: 1 for root in marked}


def test_the_span_bound_keeps_a_marked_run_decided_early_and_passes_its_later_spans() -> None:
    rig = Rig(ratio=0.0, max_held_spans=2)
    marked = _open_with_one_span(rig)
    keep_trace(marked.get_span_context())
    healthy = _open_with_one_span(rig)
    assert rig.retention.decisions == {}
    rig.child(healthy).end()  # a third held span: the oldest trace is decided at once
    assert rig.retention.decisions == {("kept", "capacity"): 1}
    assert rig.retention.held_spans == 2
    marked_id = marked.get_span_context().trace_id
    assert rig.traces() == {marked_id: 1}
    rig.child(marked).end()
    marked.end()
    assert rig.traces() == {marked_id: 3}  # whole
    healthy.end()
    assert rig.retention.decisions == {("kept", "capacity"): 1, ("dropped", "ratio"): 1}


# --- roots parked for a judge's word ------------------------------------------------------------


def _foreign_run(rig: Rig, judge: Judge, **attrs: Any) -> int:
    root = rig.root(foreign=True)
    trace_id = root.get_span_context().trace_id
    judge.awaited.add(trace_id)
    rig.child(root, foreign=True, **attrs).end()
    root.end()
    return trace_id


@pytest.mark.parametrize(("verdict", "exported"), [(True, 2), (False, 0)])
def test_a_foreign_root_waits_for_the_judge_and_its_verdict_decides(
    verdict: bool, exported: int
) -> None:
    rig, judge = Rig(ratio=0.0), Judge()
    trace_id = _foreign_run(rig, judge)
    assert rig.retention.held_traces == 1 and rig.traces() == {}
    assert rig.retention.decisions == {}
    trace_judged(trace_id, verdict)
    assert rig.traces() == ({trace_id: exported} if exported else {})
    basis = ("kept", "outcome") if verdict else ("dropped", "ratio")
    assert rig.retention.decisions == {basis: 1}
    assert rig.retention.held_traces == 0
    rig.retention.judged(trace_id, True)  # a word on a decided trace changes nothing
    assert rig.retention.decisions == {basis: 1}


def test_no_wait_for_our_own_root_a_judged_one_or_one_its_spans_keep() -> None:
    rig, judge = Rig(ratio=0.0), Judge()
    ours = rig.root()
    judge.awaited.add(ours.get_span_context().trace_id)
    ours.end()
    assert rig.retention.held_traces == 0  # this package's own root shows its outcome
    failing = _foreign_run(rig, judge, **{semconv.RUN_OUTCOME: "error"})
    judged = rig.root(foreign=True)
    judge.awaited.add(judged.get_span_context().trace_id)
    trace_judged(judged.get_span_context().trace_id, False)
    assert rig.retention.held_traces == 1  # a word before the root ends decides nothing yet
    judged.end()
    assert rig.retention.held_traces == 0  # and its root then waits for nothing
    unawaited = rig.root(foreign=True)
    unawaited.end()
    assert rig.retention.held_traces == 0
    assert rig.traces() == {failing: 2}
    assert rig.retention.decisions == {("kept", "outcome"): 1, ("dropped", "ratio"): 3}


def test_a_mark_or_a_flush_settles_a_parked_root_at_once() -> None:
    inner = Recorder()
    rig, judge = Rig(ratio=0.0, inner=inner), Judge()
    marked = _foreign_run(rig, judge)
    assert keep_trace(marked) is True
    assert len(inner.ended) == 2
    _foreign_run(rig, judge)
    assert rig.retention.held_traces == 1
    assert rig.retention.force_flush(500) is True
    assert rig.retention.held_traces == 0 and inner.flushes == [500]
    assert rig.retention.decisions == {("kept", "outcome"): 1, ("dropped", "ratio"): 1}


@pytest.mark.parametrize("next_span", ["root start", "end"])
def test_the_parking_threads_next_root_or_span_end_settles_its_parked_root(next_span: str) -> None:
    rig, judge = Rig(ratio=0.0), Judge()
    rig.run()  # a trace decided before any root was parked
    other = rig.root()
    trace_id = _foreign_run(rig, judge)
    child = rig.child(other)  # a child's start costs nothing: the parked root still waits
    assert rig.retention.held_traces == 2
    assert rig.retention.decisions == {("dropped", "ratio"): 1}
    fresh = rig.root() if next_span == "root start" else None
    if fresh is None:
        child.end()
    # In the thread that parked it, the next root start or span end: its dispatch has finished.
    assert rig.retention.decisions == {("dropped", "ratio"): 2}
    assert not rig.retention.will_export(trace_id) and trace_id not in rig.traces()
    assert rig.retention.held_traces == (2 if fresh else 1)
    for span in (child, fresh, other):
        if span is not None:
            span.end()


def _park_in_a_worker(rig: Rig, judge: Judge) -> int:
    parked: list[int] = []
    worker = threading.Thread(target=lambda: parked.append(_foreign_run(rig, judge)))
    worker.start()
    worker.join()
    return parked[0]


def test_another_thread_settles_a_parked_root_only_after_the_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(retention, "_JUDGE_GRACE_S", 0.05)
    rig, judge = Rig(ratio=0.0), Judge()
    other = rig.root()
    _park_in_a_worker(rig, judge)
    rig.child(other).end()
    fresh = rig.root()
    assert rig.retention.held_traces == 3  # the judge may still be on its way
    time.sleep(0.06)
    rig.child(other).end()
    assert rig.retention.held_traces == 2
    assert rig.retention.decisions == {("dropped", "ratio"): 1}
    fresh.end()
    other.end()


def _park_in_two_threads(rig: Rig, judge: Judge) -> list[int]:
    """Two roots parked at once: by two threads alive together (one thread parks one root)."""
    parked: list[int] = []
    barrier = threading.Barrier(2)

    def work() -> None:
        parked.append(_foreign_run(rig, judge))
        barrier.wait(10)

    workers = [threading.Thread(target=work) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return parked


def test_a_flush_from_any_thread_settles_every_parked_root() -> None:
    rig, judge = Rig(ratio=0.5), Judge()
    rig.ids.queued += [kept_id(), kept_id()]  # healthy runs the ratio keeps
    parked = _park_in_two_threads(rig, judge)
    assert rig.retention.held_traces == 2 and rig.traces() == {}
    assert rig.provider.force_flush()
    assert rig.retention.held_traces == 0
    assert rig.retention.decisions == {("kept", "ratio"): 2}
    assert rig.traces() == dict.fromkeys(parked, 2)


def test_a_root_still_parked_after_another_was_judged_is_settled_after_the_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rig, judge = Rig(ratio=0.0), Judge()
    first, _ = _park_in_two_threads(rig, judge)
    trace_judged(first, True)
    assert rig.retention.held_traces == 1
    monkeypatch.setattr(retention, "_JUDGE_GRACE_S", 0.0)
    fresh = rig.root()
    assert rig.retention.held_traces == 1  # only the fresh root
    assert rig.retention.decisions == {("kept", "outcome"): 1, ("dropped", "ratio"): 1}
    fresh.end()


def test_a_failing_span_ending_after_its_root_was_parked_keeps_the_trace_on_its_outcome() -> None:
    """A late span of the run (ended on another thread than the root) says it failed: when the
    parked root is settled, the trace is kept whole, on its outcome."""
    rig, judge = Rig(ratio=0.0), Judge()
    root = rig.root(foreign=True)
    trace_id = root.get_span_context().trace_id
    judge.awaited.add(trace_id)
    late = rig.child(root, foreign=True, **{semconv.RUN_OUTCOME: "error"})
    ender = threading.Thread(target=root.end)
    ender.start()
    ender.join()
    late.end()  # not the parking thread, within the grace: the root still waits
    assert rig.retention.held_traces == 1 and rig.traces() == {}
    assert rig.retention.force_flush(500) is True
    assert rig.retention.decisions == {("kept", "outcome"): 1}
    assert rig.traces() == {trace_id: 2}


@pytest.mark.parametrize("then", ["a root starts", "a root ends", "a span passes the bound"])
def test_a_parked_root_the_ratio_keeps_is_exported_whatever_settles_it(then: str) -> None:
    one = SPAN_OVERHEAD_BYTES + 100 + 10
    rig, judge = Rig(ratio=0.5, max_held_bytes=4 * one), Judge()
    open_run = rig.root(dropped_id())
    rig.child(open_run, text="x" * 10).end()
    waiting = rig.root(dropped_id())  # started before the root below was parked
    rig.ids.queued.append(kept_id())
    parked = _foreign_run(rig, judge, text="x" * 10)
    assert rig.retention.held_traces == 3 and rig.traces() == {}
    fresh = rig.root(dropped_id()) if then == "a root starts" else None
    if then == "a root ends":
        waiting.end()
    elif then == "a span passes the bound":  # settled first, then the open run goes early
        rig.child(open_run, text="x" * (4 * one)).end()
        assert rig.retention.decisions[("dropped", "capacity")] == 1
    assert rig.traces() == {parked: 2}
    for span in (fresh, waiting, open_run):
        if span is not None and span.is_recording():
            span.end()


# --- failures never reach the SDK -------------------------------------------------------------


def test_an_inner_processor_that_raises_costs_only_its_span_and_is_logged_once() -> None:
    inner = Recorder(fail_on="chat 0")
    rig = Rig(ratio=0.0, inner=inner)
    with capture_logs() as logs:
        rig.run(children=3, **{semconv.RUN_OUTCOME: "error"})
        rig.run(children=1, **{semconv.RUN_OUTCOME: "error"})
    assert inner.names == ["chat 1", "chat 2", "invoke_agent a", "invoke_agent a"]
    failures = [e for e in logs if e["event"] == "symfonic_otel.internal_failure"]
    assert [e["kind"] for e in failures] == ["trace_retention_export"]
    assert failures[0]["error_type"] == "RuntimeError"


def test_a_span_retention_cannot_read_is_passed_on_rather_than_lost() -> None:
    inner = Recorder()
    rig = Rig(ratio=0.0, inner=inner)
    context = SpanContext(0x99, 0x98, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    odd = ReadableSpan("odd", context=context, events=[None])  # type: ignore[list-item]
    with capture_logs() as logs:
        rig.retention.on_end(odd)
    assert inner.names == ["odd"] and rig.retention.held_spans == 0
    [line] = [e for e in logs if e["event"] == "symfonic_otel.internal_failure"]
    assert line["kind"] == "trace_retention" and line["error_type"] == "AttributeError"


# --- counters ---------------------------------------------------------------------------------


def _points(reader: InMemoryMetricReader) -> dict[str, dict[tuple[Any, ...], float]]:
    data = reader.get_metrics_data()
    found: dict[str, dict[tuple[Any, ...], float]] = {}
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                assert (scope.scope.name, scope.scope.version) == (semconv.SCOPE_NAME, __version__)
                values = found.setdefault(metric.name, {})
                for point in metric.data.data_points:
                    values[tuple(sorted((point.attributes or {}).values()))] = point.value  # type: ignore[union-attr]
    return found


def test_the_counters_report_every_decision_and_drop_reason_from_zero(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    rig = Rig(ratio=0.0, meter_provider=meters, max_held_spans=3)
    start = _points(reader)
    assert start[semconv.RETENTION_TRACES.name] == {
        ("kept", "outcome"): 0,
        ("kept", "ratio"): 0,
        ("dropped", "ratio"): 0,
        ("capacity", "kept"): 0,
        ("capacity", "dropped"): 0,
    }
    assert start[semconv.RETENTION_DROPPED_SPANS.name] == {("unsampled",): 0, ("decided_early",): 0}
    assert start[semconv.RETENTION_LATE_KEEPS.name] == {(): 0}
    assert start[semconv.RETENTION_HELD_SPANS.name] == {(): 0}
    dropped = rig.run(children=2)
    rig.run(children=1, **{semconv.RUN_OUTCOME: "error"})
    keep_trace(dropped)
    held = rig.root()
    rig.child(held).end()
    after = _points(reader)
    assert after[semconv.RETENTION_TRACES.name][("kept", "outcome")] == 1
    assert after[semconv.RETENTION_TRACES.name][("dropped", "ratio")] == 1
    assert after[semconv.RETENTION_DROPPED_SPANS.name][("unsampled",)] == 3
    assert after[semconv.RETENTION_LATE_KEEPS.name] == {(): 1}
    assert after[semconv.RETENTION_HELD_SPANS.name] == {(): 1}
    held.end()
    del rig, held
    gc.collect()  # a retired processor is held weakly: its counters stop reporting
    with caplog.at_level(logging.WARNING):
        assert all(not values for values in _points(reader).values())
    assert not caplog.records  # quietly: no callback fails at each collection
    meters.shutdown()


def test_the_counters_carry_the_documented_units() -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    keep_alive = OutcomeRetentionSpanProcessor(
        Recorder(), healthy_trace_ratio=0.5, meter_provider=meters
    )
    data = reader.get_metrics_data()
    assert data is not None
    metrics = {m.name: m for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}
    for spec in (
        semconv.RETENTION_TRACES,
        semconv.RETENTION_DROPPED_SPANS,
        semconv.RETENTION_LATE_KEEPS,
        semconv.RETENTION_HELD_SPANS,
    ):
        assert (metrics[spec.name].unit, metrics[spec.name].description) == (
            spec.unit,
            spec.description,
        )
    assert metrics[semconv.RETENTION_HELD_SPANS.name].data.is_monotonic is False  # type: ignore[union-attr]
    assert metrics[semconv.RETENTION_TRACES.name].data.is_monotonic is True  # type: ignore[union-attr]
    assert keep_alive.held_spans == 0
    meters.shutdown()
