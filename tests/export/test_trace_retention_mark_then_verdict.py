"""A judge's "healthy" verdict never takes back a keep that came first: a run marked to be kept
(a bail, a fabrication detection, an error its handler saw) stays kept whichever order the mark
and the judge's word reach outcome retention in, and its trace is exported whole."""

from __future__ import annotations

import pytest

from symfonic_otel.emit.retention_marks import keep_trace, trace_judged
from tests.support.retention_rig import Judge, Rig


@pytest.mark.parametrize("order", ["mark-then-verdict", "verdict-then-mark"])
def test_a_kept_run_stays_kept_after_a_healthy_verdict(order: str) -> None:
    rig, judge = Rig(ratio=0.0), Judge()
    root = rig.root(foreign=True)
    trace_id = root.get_span_context().trace_id
    judge.awaited.add(trace_id)
    rig.child(root, foreign=True).end()
    if order == "mark-then-verdict":
        assert keep_trace(root.get_span_context()) is True
        trace_judged(trace_id, False)
    else:
        trace_judged(trace_id, False)
        assert keep_trace(root.get_span_context()) is True
    assert rig.retention.will_export(trace_id) is True
    root.end()
    assert rig.traces() == {trace_id: 2}
    assert rig.retention.decisions == {("kept", "outcome"): 1}
