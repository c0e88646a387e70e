"""A "keep this trace" mark reaches every live retention processor, even after one of them
answers that it already dropped the trace: a second processor still holding the trace keeps it
whole, and the mark still reports the loss (``False``) for the exemplar's sake."""

from __future__ import annotations

from symfonic_otel import OutcomeRetentionSpanProcessor
from symfonic_otel.emit.retention_marks import keep_trace
from tests.support.retention_rig import Recorder, Rig, dropped_id


def test_a_processor_that_dropped_the_trace_does_not_stop_the_mark_for_the_next() -> None:
    rig = Rig(ratio=0.0, max_held_spans=2)  # registered first: it decides the trace early
    later_inner = Recorder()
    later = OutcomeRetentionSpanProcessor(later_inner, healthy_trace_ratio=0.0)
    rig.provider.add_span_processor(later)
    root = rig.root(dropped_id())
    for _ in range(3):
        rig.child(root).end()
    assert rig.retention.decisions == {("dropped", "capacity"): 1}
    assert later.held_spans == 3

    assert keep_trace(root.get_span_context()) is False  # the first processor lost it
    root.end()
    assert rig.retention.late_keeps == 1
    assert len(later_inner.ended) == 4  # the later one kept the whole trace
    assert later.decisions == {("kept", "outcome"): 1}
