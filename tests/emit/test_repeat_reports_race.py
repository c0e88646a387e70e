"""Two collections reporting repeated tool calls at once (a flush and the periodic export) count
each repeat once: the queue of runs is drained under one lock, so a collection that finds the
run queued again waits for the one still reading it, and counts only what came after.

The interleaving is forced (``tests/support/paused_section.py``): the first collection is paused
after it read the run's repeats and before it records them as reported; the run repeats again
and the second collection runs then.
"""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.emit.loop_metrics import LoopMetrics
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.paused_section import PausedBefore


class _Run:
    """A run's repeat counts as the loop detector keeps them (``core.loops.RunLoops``)."""

    def __init__(self) -> None:
        self.repeated = 0
        self.reported = 0
        self.queued = False

    def repeat(self, loops: LoopMetrics, times: int) -> None:
        self.repeated += times
        if not self.queued:  # as the loop detector queues it
            self.queued = True
            loops.repeating(self, "acme")


def test_a_repeat_reported_by_two_collections_at_once_is_counted_once(
    telemetry: InMemoryTelemetry,
) -> None:
    emitter = MetricEmitter(telemetry.meter_provider.get_meter("t"), "ops")
    loops, run = emitter.loops, _Run()
    run.repeat(loops, 5)
    with PausedBefore(LoopMetrics.report_repeats, "new, run.reported =") as periodic:
        periodic.start(loops.report_repeats)
        run.repeat(loops, 1)
        loops.report_repeats()
        periodic.finish()
    loops.report_repeats()
    totals = emitter.counters.snapshot(semconv.REPEATED_TOOL_CALLS.name)
    assert [(s.attributes[semconv.TENANT_ID], s.total) for s in totals] == [("acme", 6)]
