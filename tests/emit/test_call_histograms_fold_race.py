"""A fold run by the recording thread (its queue past the cap) while a collection folds: the
folds take turns under the lock, so a set is made once and keeps every run's value.

The interleaving is forced, not hoped for: the first run's attribute set is a mapping that
pauses the collecting thread while its new set is being made, and the recording thread then
fills the queue past its cap.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, KeysView, Mapping

from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader

from symfonic_otel import semconv
from symfonic_otel.emit.call_histograms import CallHistograms

# How long the paused fold waits for the recording thread's fold; with the lock held that fold
# cannot run meanwhile, so the pause ends by this timeout.
_PAUSE_S = 0.1
_SET = {"gen_ai.agent.name": "a", "symfonic.run.outcome": "completed"}


class _PausingSet(Mapping[str, str]):
    """An attribute set that pauses the thread the first time it is copied into a new set."""

    def __init__(self, items: Mapping[str, str]) -> None:
        self._items = dict(items)
        self.paused, self.resume = threading.Event(), threading.Event()

    def keys(self) -> KeysView[str]:
        if not self.paused.is_set():
            self.paused.set()
            self.resume.wait(_PAUSE_S)
        return self._items.keys()

    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


def test_a_fold_by_the_recording_thread_during_a_collection_s_fold_loses_no_run() -> None:
    histograms = CallHistograms(queue_cap=1)
    reader = InMemoryMetricReader()
    cumulative = AggregationTemporality.CUMULATIVE
    histograms.add_reader(reader, cumulative)
    first = _PausingSet(_SET)
    histograms.record(first, 1, 1)
    collection = threading.Thread(target=histograms.metrics, args=(reader, cumulative))
    collection.start()
    try:
        assert first.paused.wait(2.0)
        histograms.record(dict(_SET), 2, 2)
        histograms.record(dict(_SET), 3, 3)  # past the cap: this thread folds
        first.resume.set()
    finally:
        first.resume.set()
        collection.join()
    metrics = {m.name: m for m in histograms.metrics(reader, cumulative)}
    for spec in (semconv.INVOKE_AGENT_INFERENCE_CALLS, semconv.INVOKE_AGENT_TOOL_CALLS):
        (point,) = metrics[spec.name].data.data_points
        assert (point.count, point.sum) == (3, 6)  # type: ignore[union-attr]
        assert dict(point.attributes or {}) == _SET
