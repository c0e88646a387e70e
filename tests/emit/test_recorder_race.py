"""Threads adding to one counter series while collections drain the pending sums: every
increment reaches the SDK (the recorder's lock keeps a sum's read-add-write whole against another
thread and against the swap at collection), so totals such as ``active_runs`` and
``dropped_events`` stay exact under load."""

from __future__ import annotations

import threading

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint

from symfonic_otel.emit.recorder import DeferredRecorder

THREADS, ADDS = 8, 150_000


def test_a_counter_summed_on_many_threads_while_drained_loses_no_increment(
    switch_often: None,
) -> None:
    """The recorder under the handler's counters, on a real SDK counter: threads adding to the
    same series while collections drain it; the counter reads every increment."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    counter = provider.get_meter("test").create_counter("adds")
    recorder = DeferredRecorder()
    attributes = {"k": "v"}
    start = threading.Barrier(THREADS + 1)
    done = threading.Event()

    def add() -> None:
        start.wait()
        for _ in range(ADDS):
            recorder.add(counter, 1, attributes)

    def drain() -> None:
        start.wait()
        while not done.is_set():
            recorder.drain()

    workers = [threading.Thread(target=add) for _ in range(THREADS)]
    drainer = threading.Thread(target=drain)
    try:
        for thread in (*workers, drainer):
            thread.start()
        for thread in workers:
            thread.join()
        done.set()
        drainer.join()
        recorder.drain()
        data = reader.get_metrics_data()
    finally:
        provider.shutdown()
    assert data is not None
    values = [
        point.value
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        for point in metric.data.data_points
        if isinstance(point, NumberDataPoint)
    ]
    assert values == [THREADS * ADDS]
