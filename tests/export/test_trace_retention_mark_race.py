"""A mark to keep a trace arriving as its root ends on another thread: the mark and the
decision are taken under one lock, so either the mark lands first and the run is exported whole,
or the decision does and the mark answers ``False`` (its exemplar then names no lost trace).
Never a mark that answers ``True`` for a trace that was dropped.

The interleaving is forced (``tests/support/paused_section.py``): the mark is paused after it
found the trace held and before it sets the keep; the root ends then.
"""

from __future__ import annotations

from symfonic_otel import OutcomeRetentionSpanProcessor
from tests.support.paused_section import PausedBefore
from tests.support.retention_rig import Rig, dropped_id


def test_a_mark_racing_the_roots_end_keeps_the_run_it_answers_true_for() -> None:
    rig = Rig(ratio=0.0)  # a healthy run is dropped unless marked
    trace_id = dropped_id()
    root = rig.root(trace_id)
    rig.child(root).end()
    with PausedBefore(OutcomeRetentionSpanProcessor.mark_keep, "held.keep = True") as mark:
        mark.start(rig.retention.mark_keep, trace_id)
        root.end()
        answered = mark.finish()
    assert answered is True
    assert rig.traces()[trace_id] == 2
    rig.provider.shutdown()
