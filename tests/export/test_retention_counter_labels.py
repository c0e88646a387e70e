"""Outcome retention's decision counter names each label by its key: the decision (``kept`` /
``dropped``) under the decision key and its basis (``outcome`` / ``ratio`` / ``capacity``) under
the basis key, never the other way round, and the dropped-span counter its reason under the drop
reason key (the shipped rules and panels select on those keys); the held-span gauge and the
late-keep counter each read their own count."""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint

from symfonic_otel import semconv
from tests.support.recorded import reader_points
from tests.support.retention_rig import Rig, dropped_id


def _labelled(
    reader: InMemoryMetricReader, name: str
) -> dict[frozenset[tuple[str, object]], float]:
    return {
        frozenset((point.attributes or {}).items()): point.value
        for point in reader_points(reader, name)
        if isinstance(point, NumberDataPoint)
    }


def test_each_decision_and_drop_is_counted_under_its_own_keys() -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    rig = Rig(ratio=0.0, meter_provider=meters)
    try:
        rig.run(dropped_id(), children=2)
        rig.run(dropped_id(), children=1, **{semconv.RUN_OUTCOME: "error"})
        decided = _labelled(reader, semconv.RETENTION_TRACES.name)
        dropped = _labelled(reader, semconv.RETENTION_DROPPED_SPANS.name)
    finally:
        meters.shutdown()
    decision, basis = semconv.RETENTION_DECISION, semconv.RETENTION_BASIS
    assert decided[frozenset({(decision, "kept"), (basis, "outcome")})] == 1
    assert decided[frozenset({(decision, "dropped"), (basis, "ratio")})] == 1
    assert decided[frozenset({(decision, "kept"), (basis, "capacity")})] == 0
    assert decided[frozenset({(decision, "dropped"), (basis, "capacity")})] == 0
    assert decided[frozenset({(decision, "kept"), (basis, "ratio")})] == 0
    assert dropped == {
        frozenset({(semconv.TELEMETRY_DROP_REASON, "unsampled")}): 3,
        frozenset({(semconv.TELEMETRY_DROP_REASON, "decided_early")}): 0,
    }


def test_the_held_span_gauge_and_the_late_keep_counter_each_read_their_own_count() -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    rig = Rig(ratio=0.0, meter_provider=meters)
    try:
        root = rig.root(dropped_id())
        for _ in range(3):
            rig.child(root).end()
        held = _labelled(reader, semconv.RETENTION_HELD_SPANS.name)
        late = _labelled(reader, semconv.RETENTION_LATE_KEEPS.name)
        root.end()
    finally:
        meters.shutdown()
    assert (held, late) == ({frozenset(): 3}, {frozenset(): 0})
