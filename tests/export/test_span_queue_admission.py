"""The span export queue admits exactly its cap and counts the one past as dropped."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from symfonic_otel import semconv
from symfonic_otel.export.span_export import DropCountingBatchSpanProcessor
from tests.support.paused_section import PausedBefore

# --- span export: queue admission at the cap and one past ------------------------------------


class _HeldExporter(SpanExporter):
    """Blocks in its first export until released, so nothing else leaves the queue meanwhile."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.exported = 0

    def export(self, spans: Any) -> SpanExportResult:
        self.entered.set()
        self.release.wait(10)
        self.exported += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


@pytest.mark.parametrize(("extra", "dropped"), [(0, 0), (1, 1)])
def test_span_queue_admits_exactly_its_cap_and_drops_one_past(extra: int, dropped: int) -> None:
    cap = 4
    exporter = _HeldExporter()
    processor = DropCountingBatchSpanProcessor(
        exporter, max_queue_size=cap, max_export_batch_size=1, schedule_delay_millis=60_000
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("t")
    try:
        tracer.start_span("first").end()  # taken by the worker, which then blocks exporting it
        assert exporter.entered.wait(10)
        for index in range(cap + extra):  # ``cap`` waiting spans fill the queue exactly
            tracer.start_span(f"s{index}").end()
        assert processor.losses[semconv.SPAN_DROP_QUEUE_FULL] == dropped
    finally:
        exporter.release.set()
        provider.shutdown()
    assert exporter.exported == 1 + cap
    assert processor.dropped_spans == dropped


def test_two_spans_ending_at_once_for_the_last_place_in_the_queue_admit_one() -> None:
    """The check against the cap and the count of the admitted span happen under one lock: a
    span ending on another thread in between (forced: ``tests/support/paused_section.py``) waits
    and finds the queue full."""
    cap = 2
    exporter = _HeldExporter()
    processor = DropCountingBatchSpanProcessor(
        exporter, max_queue_size=cap, max_export_batch_size=1, schedule_delay_millis=60_000
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("t")
    try:
        tracer.start_span("first").end()  # taken by the worker, which then blocks exporting it
        assert exporter.entered.wait(10)
        tracer.start_span("waiting").end()  # one place left
        with PausedBefore(DropCountingBatchSpanProcessor.on_end, "self._pending += 1") as one:
            one.start(tracer.start_span("one").end)
            tracer.start_span("other").end()
            one.finish()
        assert processor.losses[semconv.SPAN_DROP_QUEUE_FULL] == 1
    finally:
        exporter.release.set()
        provider.shutdown()
    assert exporter.exported == 1 + cap
