"""Marks and verdicts reach every live retention processor; every live judge is waited for.

``emit.retention_marks`` holds the retention processors and the judges weakly, in registration
order: a newer one never hides an older one that still lives, one that was collected or one that
fails never keeps the word from those after it, and with no retention processor at all a mark
answers that the trace will be exported.
"""

from __future__ import annotations

import gc
import weakref

import pytest
from opentelemetry.trace import SpanContext, TraceFlags

from symfonic_otel.emit import retention_marks
from symfonic_otel.emit.retention_marks import keep_trace, register_retention, trace_judged
from tests.support.retention_rig import Judge, Rig


def _foreign_root_awaited_by(rig: Rig, judge: Judge) -> int:
    """A foreign run's root, ended: the retention holds it until a judge's word."""
    root = rig.root(foreign=True)
    trace_id = root.get_span_context().trace_id
    judge.awaited.add(trace_id)
    root.end()
    return trace_id


def test_an_older_live_judge_is_still_waited_for_after_a_newer_one_registers() -> None:
    rig = Rig(ratio=0.0)
    older, newer = Judge(), Judge()
    trace_id = _foreign_root_awaited_by(rig, older)
    assert rig.retention.held_traces == 1 and rig.traces() == {}
    trace_judged(trace_id, True)
    assert rig.traces() == {trace_id: 1}
    assert newer.awaited == set()


def test_a_verdict_reaches_a_live_processor_registered_after_one_since_collected() -> None:
    gone = Rig(ratio=0.0)
    live, judge = Rig(ratio=0.0), Judge()
    collected = weakref.ref(gone.retention)
    del gone
    gc.collect()
    assert collected() is None
    trace_id = _foreign_root_awaited_by(live, judge)
    trace_judged(trace_id, True)
    assert live.traces() == {trace_id: 1}
    assert live.retention.decisions == {("kept", "outcome"): 1}


class _Failing:
    """A retention processor whose every call fails."""

    def mark_keep(self, trace_id: int) -> bool:
        raise RuntimeError("mark failed")

    def judged(self, trace_id: int, keep: bool) -> None:
        raise RuntimeError("verdict failed")


def test_a_failing_processor_keeps_the_verdict_from_no_processor_after_it() -> None:
    failing = _Failing()
    register_retention(failing)
    try:
        live, judge = Rig(ratio=0.0), Judge()
        trace_id = _foreign_root_awaited_by(live, judge)
        trace_judged(trace_id, True)  # never raises into the judge
        assert live.traces() == {trace_id: 1}
    finally:
        del failing  # the last reference: gone from the registry for the tests after this one


def test_with_no_retention_processor_every_trace_will_be_exported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(retention_marks, "_retentions", ())
    context = SpanContext(0x5A5A, 0x7, is_remote=False, trace_flags=TraceFlags(1))
    assert keep_trace(context) is True
    assert keep_trace(0x5A5A) is True
    trace_judged(0x5A5A, False)  # nobody to tell: nothing happens


def test_a_failing_processor_keeps_the_mark_from_no_processor_after_it() -> None:
    failing = _Failing()
    register_retention(failing)
    try:
        live = Rig(ratio=0.0)
        root = live.root()
        trace_id = root.get_span_context().trace_id
        assert keep_trace(root.get_span_context()) is True  # never raises into the run
        root.end()
        assert live.traces() == {trace_id: 1}
    finally:
        del failing  # the last reference: gone from the registry for the tests after this one


def test_a_context_without_a_trace_id_never_fails_the_mark_and_is_not_reported_dropped() -> None:
    """No processor can have dropped a trace the mark cannot name: the answer stays True."""
    live = Rig(ratio=0.0)
    assert keep_trace(object()) is True  # type: ignore[arg-type]
    assert live.retention.held_traces == 0
