"""A run whose local root has a remote parent (a request that came with ``traceparent``) is known
to outcome retention from that root's start, as a root without a parent is: a "keep this trace"
mark given while nothing of it has ended yet reaches the trace and keeps it whole, even at a
ratio that drops every healthy run."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from symfonic_otel.emit.retention_marks import keep_trace
from tests.support.retention_rig import Rig, dropped_id


@pytest.mark.parametrize("remote_parent", [True, False], ids=["remote-parent", "no-parent"])
def test_a_mark_before_any_span_ended_keeps_the_trace(remote_parent: bool) -> None:
    rig = Rig(ratio=0.0)
    trace_id = dropped_id()
    if remote_parent:
        remote = SpanContext(
            trace_id, 0xDEF, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
        )
        parent = trace.set_span_in_context(NonRecordingSpan(remote))
        entry = rig.ours.start_span("GET /", context=parent)
    else:
        entry = rig.root(trace_id)
    assert entry.get_span_context().trace_id == trace_id
    assert rig.retention.held_traces == 1  # known from the root's start
    assert keep_trace(entry.get_span_context()) is True
    assert rig.retention.will_export(trace_id) is True
    with trace.use_span(entry, end_on_exit=False):
        rig.ours.start_span("chat").end()
    entry.end()
    assert rig.traces() == {trace_id: 2}
    assert rig.retention.decisions == {("kept", "outcome"): 1}
