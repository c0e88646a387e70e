"""Two collections at once of a delta reader the call histograms do not follow yet (its first
flush racing its first periodic export): the reader's view is made once, under the histograms'
lock, so the values folded before are in one delta only, not sent by both collections.

The interleaving is forced (``tests/support/paused_section.py``): the first collection is paused
as it makes the reader's view, and the second runs then.
"""

from __future__ import annotations

from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader, Metric

from symfonic_otel import semconv
from symfonic_otel.emit.call_histograms import CallHistograms
from tests.support.paused_section import PausedBefore

DELTA = AggregationTemporality.DELTA
ACME = {semconv.TENANT_ID: "acme"}


def _runs(metrics: list[Metric]) -> int:
    counts: list[int] = [
        point.count  # type: ignore[union-attr]
        for metric in metrics
        if metric.name == semconv.INVOKE_AGENT_INFERENCE_CALLS.name
        for point in metric.data.data_points
    ]
    return sum(counts)


def test_a_new_delta_readers_first_two_collections_at_once_send_each_run_once() -> None:
    histograms = CallHistograms()
    histograms.record(ACME, 3, 1)
    histograms.record(ACME, 2, None)
    reader = InMemoryMetricReader()
    with PausedBefore(CallHistograms.metrics, "view = self._views[reader] = _View(") as first:
        first.start(histograms.metrics, reader, DELTA)
        flushed = histograms.metrics(reader, DELTA)
        exported = first.finish()
    assert _runs(exported) + _runs(flushed) == 2
