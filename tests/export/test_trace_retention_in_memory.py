"""Outcome retention in process: which traces are kept, how the ratio decides, what a mark does.

A real SDK ``TracerProvider`` with chosen trace ids, the retention processor in front of a
``SimpleSpanProcessor`` into an ``InMemorySpanExporter``; each test reads what was exported and
the processor's counts (docs/operators/trace-retention.md states the rules).
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult, TraceIdRatioBased
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags
from structlog.testing import capture_logs

from symfonic_otel import OutcomeRetentionSpanProcessor, semconv
from symfonic_otel.emit.retention_marks import keep_trace
from symfonic_otel.export import retention as retention_module
from symfonic_otel.export.span_export import DropCountingBatchSpanProcessor
from tests.support.retention_rig import HALF, HIGH_BITS, Recorder, Rig, dropped_id, kept_id

_KEPT: list[dict[str, Any]] = [
    {semconv.RUN_OUTCOME: "error"},
    {semconv.RUN_OUTCOME: "cancelled"},
    {semconv.RUN_OUTCOME: "abandoned"},
    {semconv.REACT_TERMINATION_REASON: "tool_calls_with_no_text"},
    {semconv.RUN_STOP_REASON: semconv.STOP_REASON_LOOP_DETECTED},
    {semconv.RUN_STOP_REASON: semconv.STOP_REASON_RECURSION_LIMIT},
    {semconv.RUN_STOP_REASON: semconv.STOP_REASON_ERROR},
    {semconv.RUN_STOP_REASON: semconv.STOP_REASON_INTERRUPTED},
    {semconv.RESPONSE_EMPTY: True},
    {semconv.RESPONSE_EMPTY: True, semconv.RUN_PAUSED: False},
    {semconv.SYNTHESIS_RECOVERED: True},
    {semconv.NODE_NAME: semconv.NODE_SYNTHESIZE_FALLBACK},
]
_HEALTHY: list[dict[str, Any]] = [
    {},
    {semconv.RUN_OUTCOME: "completed"},
    {semconv.RUN_STOP_REASON: "end_turn"},
    {semconv.RESPONSE_EMPTY: False},
    {semconv.RESPONSE_EMPTY: True, semconv.RUN_PAUSED: True},  # paused for a human: not a bail
    {semconv.NODE_NAME: "agent"},
    {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT},
]


@pytest.mark.parametrize("attrs", _KEPT, ids=str)
def test_a_failing_run_is_exported_whole_whichever_span_shows_it(attrs: dict[str, Any]) -> None:
    rig = Rig(ratio=0.0)
    trace_id = rig.run(children=3, **attrs)
    assert rig.traces() == {trace_id: 4}
    assert rig.retention.decisions == {("kept", "outcome"): 1}
    assert rig.retention.dropped_spans == {"unsampled": 0, "decided_early": 0}


@pytest.mark.parametrize("attrs", _HEALTHY, ids=str)
def test_a_healthy_run_is_dropped_at_ratio_zero_and_counted(attrs: dict[str, Any]) -> None:
    rig = Rig(ratio=0.0)
    rig.run(children=3, **attrs)
    assert rig.traces() == {}
    assert rig.retention.decisions == {("dropped", "ratio"): 1}
    assert rig.retention.dropped_spans == {"unsampled": 4, "decided_early": 0}
    assert rig.retention.held_spans == 0 and rig.retention.held_bytes == 0


@pytest.mark.parametrize(
    ("event", "kept"),
    [
        (semconv.EVENT_LOOP_DETECTED, True),
        (semconv.EVENT_FABRICATION_DETECTED, True),
        ("symfonic.run.paused", False),
    ],
)
def test_a_loop_or_fabrication_event_on_any_span_keeps_the_run(event: str, kept: bool) -> None:
    rig = Rig(ratio=0.0)
    root = rig.root()
    child = rig.child(root)
    child.add_event(event)
    child.end()
    root.end()
    assert rig.traces() == ({root.get_span_context().trace_id: 2} if kept else {})


def test_error_status_keeps_a_run_on_its_root_or_an_agent_span_but_not_on_a_model_call() -> None:
    rig = Rig(ratio=0.0)
    error = Status(StatusCode.ERROR)
    on_root = rig.root()
    on_root.set_status(error)
    on_root.end()
    agent_run = rig.root()
    agent = rig.child(
        agent_run, "invoke_agent b", **{semconv.GEN_AI_OPERATION_NAME: "invoke_agent"}
    )
    agent.set_status(error)
    agent.end()
    agent_run.end()
    model_call = rig.root()
    chat = rig.child(model_call)
    chat.set_status(error)  # a failed call the run recovered from
    chat.end()
    model_call.end()
    ok_root = rig.root()
    ok_root.set_status(Status(StatusCode.OK))
    ok_root.end()
    assert rig.traces() == {
        on_root.get_span_context().trace_id: 1,
        agent_run.get_span_context().trace_id: 2,
    }


def test_a_local_root_under_a_remote_parent_is_held_and_judged_like_a_root() -> None:
    rig = Rig(ratio=0.0)
    remote = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    entry = rig.ours.start_span(
        "GET /", context=trace.set_span_in_context(NonRecordingSpan(remote))
    )
    with trace.use_span(entry, end_on_exit=False):
        rig.ours.start_span("chat").end()
    assert rig.retention.held_traces == 1 and rig.traces() == {}
    entry.set_status(Status(StatusCode.ERROR))
    entry.end()
    assert rig.traces() == {0xABC: 2}
    assert rig.retention.decisions == {("kept", "outcome"): 1}


def test_the_ratio_keeps_the_trace_ids_the_sdk_sampler_keeps_reading_the_low_64_bits() -> None:
    rig = Rig(ratio=0.5)
    ids = [HALF - 1, HALF, HIGH_BITS | (HALF - 1), HIGH_BITS | HALF, 1, 2**64 - 1]
    for trace_id in ids:
        rig.run(trace_id, children=2)
    sampler = TraceIdRatioBased(0.5)
    expected = {t for t in ids if sampler.should_sample(None, t, "x").decision.is_sampled()}
    assert expected == {HALF - 1, HIGH_BITS | (HALF - 1), 1}
    assert rig.traces() == dict.fromkeys(expected, 3)
    assert rig.retention.decisions == {("kept", "ratio"): 3, ("dropped", "ratio"): 3}
    assert rig.retention.dropped_spans == {"unsampled": 9, "decided_early": 0}


def test_will_export_answers_for_open_decided_and_marked_traces() -> None:
    rig = Rig(ratio=0.5)
    kept_open, dropped_open = rig.root(kept_id()), rig.root(dropped_id())
    kept_open_id = kept_open.get_span_context().trace_id
    dropped_open_id = dropped_open.get_span_context().trace_id
    assert rig.retention.will_export(kept_open_id) is True
    assert rig.retention.will_export(dropped_open_id) is False
    assert keep_trace(dropped_open.get_span_context()) is True
    assert rig.retention.will_export(dropped_open_id) is True  # marked: it will be kept
    kept_open.end()
    dropped_open.end()
    dropped = rig.run(dropped_id())
    kept = rig.run(kept_id())
    assert rig.retention.will_export(dropped) is False
    assert rig.retention.will_export(kept) is True
    assert rig.retention.will_export(dropped_open_id) is True  # kept for its mark, not the ratio
    assert rig.traces() == {kept_open_id: 1, dropped_open_id: 1, kept: 2}
    assert rig.retention.decisions == {
        ("kept", "ratio"): 2,
        ("kept", "outcome"): 1,
        ("dropped", "ratio"): 1,
    }


def test_at_ratio_one_every_span_passes_straight_through_and_nothing_is_held() -> None:
    rig = Rig(ratio=1.0)
    root = rig.root(HALF)
    rig.child(root).end()
    assert rig.traces() == {HALF: 1}  # exported before its root ended
    assert rig.retention.held_spans == 0 and rig.retention.held_traces == 0
    assert rig.retention.will_export(HALF) is True
    root.end()
    assert rig.traces() == {HALF: 2}
    assert rig.retention.decisions == {}


def test_a_mark_on_a_dropped_trace_answers_false_and_counts_one_late_keep() -> None:
    rig = Rig(ratio=0.0)
    dropped = rig.run()
    kept = rig.run(**{semconv.RUN_OUTCOME: "error"})
    assert keep_trace(kept) is True
    assert rig.retention.late_keeps == 0
    assert keep_trace(dropped) is False
    assert keep_trace(dropped) is False  # counted once per trace
    assert rig.retention.late_keeps == 1
    assert keep_trace(rig.run()) is False  # another trace: counted too
    assert rig.retention.late_keeps == 2
    assert rig.retention.mark_keep(0x1234) is True  # a trace this processor never saw
    assert rig.retention.decisions == {("dropped", "ratio"): 2, ("kept", "outcome"): 1}


def test_a_mark_reaches_every_live_retention_processor_not_only_the_latest() -> None:
    first, second = Rig(ratio=0.0), Rig(ratio=0.0)  # two providers, each with its retention
    first_root, second_root = first.root(), second.root()
    assert keep_trace(first_root.get_span_context()) is True
    assert keep_trace(second_root.get_span_context()) is True
    first_root.end()
    second_root.end()
    assert first.traces() == {first_root.get_span_context().trace_id: 1}
    assert second.traces() == {second_root.get_span_context().trace_id: 1}
    assert first.retention.decisions == second.retention.decisions == {("kept", "outcome"): 1}


def test_a_span_ending_after_its_trace_was_decided_follows_the_decision_and_is_counted() -> None:
    rig = Rig(ratio=0.0)
    healthy = rig.root()
    late_healthy = rig.child(healthy, "tool")
    healthy.end()
    failing = rig.root(**{semconv.RUN_OUTCOME: "error"})
    late_failing = rig.child(failing, "tool")
    failing.end()
    assert rig.retention.dropped_spans["unsampled"] == 1
    late_healthy.end()
    late_failing.end()
    assert rig.traces() == {failing.get_span_context().trace_id: 2}
    assert rig.retention.dropped_spans == {"unsampled": 2, "decided_early": 0}
    assert rig.retention.held_spans == 0 and rig.retention.held_traces == 0


def test_the_trace_count_bound_decides_the_oldest_open_run_at_its_start() -> None:
    rig = Rig(ratio=0.0, max_held_spans=2)
    first, second = rig.root(), rig.root()
    assert rig.retention.held_traces == 2 and rig.retention.decisions == {}
    third = rig.root()  # three open runs, none with an ended span: one trace too many
    assert rig.retention.held_traces == 2
    assert rig.retention.decisions == {("dropped", "capacity"): 1}
    assert rig.retention.will_export(first.get_span_context().trace_id) is False
    for span in (first, second, third):
        span.end()
    assert rig.retention.dropped_spans == {"unsampled": 2, "decided_early": 1}


def test_a_flush_exports_nothing_held_and_returns_the_inner_answer() -> None:
    inner = Recorder()
    rig = Rig(ratio=0.0, inner=inner)
    root = rig.root()
    rig.child(root).end()
    assert rig.retention.force_flush(1234) is True
    inner.flush_result = False
    assert rig.retention.force_flush(99) is False
    assert inner.flushes == [1234, 99] and inner.ended == []
    assert rig.retention.held_spans == 1
    root.end()


def test_shutdown_decides_every_held_trace_then_lets_spans_through() -> None:
    inner = Recorder()
    rig = Rig(ratio=0.0, inner=inner)
    marked, healthy = rig.root(), rig.root()
    rig.child(marked, "marked child").end()
    rig.child(healthy, "healthy child").end()
    keep_trace(marked.get_span_context())
    rig.retention.shutdown()
    assert inner.shut is True
    assert inner.names == ["marked child"]
    assert rig.retention.decisions == {("kept", "outcome"): 1, ("dropped", "ratio"): 1}
    assert rig.retention.held_spans == 0 and rig.retention.held_traces == 0
    late = rig.root()  # after shutdown nothing is held any more
    late.end()
    healthy.end()
    assert rig.retention.held_traces == 0
    assert inner.names == ["marked child", "invoke_agent a", "invoke_agent a"]


class _RecordOnly(Sampler):
    """Records every span without sampling it (what the SDK hands processors, unexported)."""

    def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
        return SamplingResult(Decision.RECORD_ONLY)

    def get_description(self) -> str:
        return "record only"


def test_the_inner_processor_sees_every_start_and_an_unsampled_span_is_never_held() -> None:
    inner = Recorder()
    rig = Rig(ratio=0.0, inner=inner)
    root = rig.root()
    rig.child(root).end()
    assert inner.started == ["invoke_agent a", "chat"]
    provider = TracerProvider(sampler=_RecordOnly())
    provider.add_span_processor(rig.retention)
    unsampled_root = provider.get_tracer("t").start_span("unsampled root")
    assert rig.retention.held_traces == 1  # only the sampled run
    unsampled_root.end()
    assert inner.names == ["unsampled root"]  # passed on at once, not held
    assert rig.retention.held_spans == 1 and rig.retention.decisions == {}
    root.end()


def test_an_exporter_is_wrapped_in_a_loss_counting_batch_processor() -> None:
    exported = InMemorySpanExporter()
    retention = OutcomeRetentionSpanProcessor(exported, healthy_trace_ratio=0.5)
    assert isinstance(retention.inner, DropCountingBatchSpanProcessor)
    assert retention.inner.exporter is exported
    rig = Rig(ratio=0.5, inner=retention)
    rig.run(HALF - 1)
    retention.force_flush()
    assert [s.context.trace_id for s in exported.get_finished_spans() if s.context] == [
        HALF - 1
    ] * 2
    retention.shutdown()


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "10"])
def test_a_bound_that_is_not_an_int_of_at_least_one_is_refused_naming_it(bad: object) -> None:
    inner = SimpleSpanProcessor(InMemorySpanExporter())
    for option in ("max_held_spans", "max_held_bytes"):
        message = rf"OutcomeRetentionSpanProcessor\({option}=\.\.\.\) must be an int >= 1, got "
        with pytest.raises(ValueError, match=message + repr(bad).replace(".", r"\.")):
            OutcomeRetentionSpanProcessor(inner, healthy_trace_ratio=0.1, **{option: bad})
    smallest = OutcomeRetentionSpanProcessor(
        inner, healthy_trace_ratio=0, max_held_spans=1, max_held_bytes=1
    )
    assert (smallest.max_held_spans, smallest.max_held_bytes) == (1, 1)
    assert smallest.healthy_trace_ratio == 0.0 and isinstance(smallest.healthy_trace_ratio, float)
    with pytest.raises(TypeError, match=r"OutcomeRetentionSpanProcessor\(inner=\.\.\.\) takes a"):
        OutcomeRetentionSpanProcessor(object(), healthy_trace_ratio=0.1)  # type: ignore[arg-type]


def test_the_inner_processor_gets_each_start_with_its_parent_context() -> None:
    inner = Recorder()
    rig = Rig(ratio=0.0, inner=inner)
    root = rig.root()
    context = trace.set_span_in_context(root)
    rig.ours.start_span("chat", context=context).end()
    assert inner.contexts[1] is context
    root.end()
    rig.retention.force_flush()
    assert inner.flushes == [30_000]


def test_a_span_built_outside_the_sdk_tracer_is_read_alike() -> None:
    inner = Recorder()
    rig = Rig(ratio=0.0, inner=inner)
    flags = TraceFlags(TraceFlags.SAMPLED)
    failed = ReadableSpan(
        "invoke_agent x",
        context=SpanContext(0x51, 0x52, is_remote=False, trace_flags=flags),
        attributes={semconv.RUN_OUTCOME: "error", "note": "abc"},
    )
    healthy = ReadableSpan(
        "invoke_agent y",
        context=SpanContext(0x61, 0x62, is_remote=False, trace_flags=flags),
        attributes={semconv.RUN_OUTCOME: "completed"},
    )
    rig.retention.on_end(failed)
    rig.retention.on_end(healthy)
    assert inner.names == ["invoke_agent x"]
    assert rig.retention.decisions == {("kept", "outcome"): 1, ("dropped", "ratio"): 1}


def test_a_second_local_root_of_a_decided_trace_follows_its_decision_unheld() -> None:
    rig = Rig(ratio=0.0)
    flags = TraceFlags(TraceFlags.SAMPLED)
    trace_id = dropped_id()
    remote = SpanContext(trace_id, 0xDEF, is_remote=True, trace_flags=flags)
    context = trace.set_span_in_context(NonRecordingSpan(remote))
    rig.ours.start_span("GET /a", context=context).end()  # the first request: dropped
    second = rig.ours.start_span("GET /b", context=context)  # the same trace comes back
    assert rig.retention.held_traces == 0
    second.end()
    assert rig.retention.dropped_spans == {"unsampled": 2, "decided_early": 0}
    assert rig.retention.decisions == {("dropped", "ratio"): 1}


def test_decisions_are_remembered_up_to_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retention_module, "_DECISIONS_REMEMBERED", 3)
    rig = Rig(ratio=0.0)
    roots = [rig.root() for _ in range(4)]
    late = [rig.child(root, "tool") for root in roots]
    for root in roots:
        root.end()
    late[0].end()  # its decision was forgotten: held as a new trace
    late[1].end()  # still remembered: dropped with its trace
    assert rig.retention.held_spans == 1 and rig.retention.held_traces == 1
    assert rig.retention.dropped_spans == {"unsampled": 5, "decided_early": 0}
    for span in late[2:]:
        span.end()


def test_a_span_without_a_context_at_its_start_is_passed_on_and_logged() -> None:
    inner = Recorder()
    rig = Rig(ratio=0.0, inner=inner)
    with capture_logs() as logs:
        rig.retention.on_start(ReadableSpan("no context"))  # type: ignore[arg-type]
    assert inner.started == ["no context"] and rig.retention.held_traces == 0
    [line] = [e for e in logs if e["event"] == "symfonic_otel.internal_failure"]
    assert line["kind"] == "trace_retention" and line["error_type"] == "AttributeError"
