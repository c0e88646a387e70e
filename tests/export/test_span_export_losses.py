"""Span export loses only the spans it must and counts each loss by reason, in process.

Real SDK spans and ``BatchSpanProcessor`` machinery; the exporters are in-process ones that fail
or block on purpose. ``_OtlpLike`` encodes every batch with the real OTLP encoder and refuses
what a collector refuses (a batch the encoder rejects, a request past 4 MiB); its module name is
an OTLP exporter's, which is how the processor recognises exporters whose batches it may split.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from structlog.testing import capture_logs

from symfonic_otel import semconv
from symfonic_otel.export.span_export import DropCountingBatchSpanProcessor, LossCountingExporter

_LIMIT = 4 * 1024 * 1024


class _OtlpLike(SpanExporter):
    """Encodes like the OTLP exporters; delivers what a collector accepts, or nothing if down."""

    def __init__(self, *, down: bool = False, raises: bool = False, grpc: bool = False) -> None:
        self.down = down
        self.raises = raises
        self.grpc = grpc  # the gRPC exporter raises on a batch it cannot encode
        self.calls: list[int] = []
        self.flushes: list[int] = []
        self.delivered: list[str] = []
        self.shutdown_with: list[float] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls.append(len(spans))
        if self.raises:
            raise ConnectionError("collector unreachable")
        try:
            size = len(encode_spans(spans).SerializeToString())
        except Exception:
            if self.grpc:
                raise
            return SpanExportResult.FAILURE
        if self.down or size > _LIMIT:
            return SpanExportResult.FAILURE
        self.delivered += [span.name for span in spans]
        return SpanExportResult.SUCCESS

    def shutdown(self, timeout_millis: float = 30_000) -> None:
        self.shutdown_with.append(timeout_millis)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        self.flushes.append(timeout_millis)
        return timeout_millis == 1234


_OtlpLike.__module__ = "opentelemetry.exporter.otlp.proto.in_process"


class _Failing(SpanExporter):
    """A non-OTLP exporter whose backend is down (its batches are never split)."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.shut = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls.append(len(spans))
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self.shut += 1


def _spans(*names: str, bad: int | None = None, big: int = 0) -> list[ReadableSpan]:
    """Ended SDK spans; ``bad`` is the index of one with a negative start time (unencodable)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("someone-else")
    for index, name in enumerate(names):
        if index == bad:
            tracer.start_span(name, start_time=-5).end(end_time=10)
        else:
            tracer.start_span(name, attributes={"blob": "x" * big} if big else None).end()
    return list(memory.get_finished_spans())


class _Calls:
    def __init__(self) -> None:
        self.handoffs: list[int] = []
        self.losses: list[tuple[str, int, BaseException | None]] = []

    def wrap(self, exporter: SpanExporter) -> LossCountingExporter:
        return LossCountingExporter(
            exporter, self.handoffs.append, lambda *loss: self.losses.append(loss)
        )


@pytest.mark.parametrize("grpc", [False, True], ids=["result", "raises"])
def test_an_unencodable_span_costs_only_itself(grpc: bool) -> None:
    calls, exporter = _Calls(), _OtlpLike(grpc=grpc)
    names = [f"good {i}" for i in range(7)]
    batch = _spans(*names[:3], "bad clock", *names[3:], bad=3)
    assert calls.wrap(exporter).export(batch) is SpanExportResult.FAILURE
    assert sorted(exporter.delivered) == names
    assert calls.handoffs == [8]
    [(reason, count, error)] = calls.losses
    assert (reason, count) == (semconv.SPAN_DROP_UNENCODABLE, 1)
    assert (error is not None) is grpc  # the encoder's own exception, when there is one
    assert exporter.calls == [8, 4, 2, 2, 1, 1, 4]  # halves, down to the one bad span


def test_a_request_of_exactly_the_limit_is_encodable() -> None:
    """A failed request of exactly 4 MiB was not too large: its loss is a delivery failure."""
    probe = _spans("a", big=_LIMIT - 10_000)
    length = _LIMIT - 10_000 + _LIMIT - len(encode_spans(probe).SerializeToString())
    [span] = _spans("a", big=length)
    assert len(encode_spans([span]).SerializeToString()) == _LIMIT
    calls = _Calls()
    calls.wrap(_OtlpLike(down=True)).export([span])
    assert calls.losses == [(semconv.SPAN_DROP_EXPORT_FAILED, 1, None)]


def test_a_request_past_a_collectors_limit_is_split_and_then_delivered() -> None:
    calls, exporter = _Calls(), _OtlpLike()
    batch = _spans("a", "b", big=_LIMIT * 3 // 5)
    assert calls.wrap(exporter).export(batch) is SpanExportResult.SUCCESS
    assert exporter.calls == [2, 1, 1] and exporter.delivered == ["a", "b"]
    assert calls.losses == []


def test_a_batch_that_encodes_but_is_not_delivered_is_counted_whole_and_not_split() -> None:
    calls, down = _Calls(), _OtlpLike(down=True)
    assert calls.wrap(down).export(_spans("a", "b", "c")) is SpanExportResult.FAILURE
    assert down.calls == [3]
    assert calls.losses == [(semconv.SPAN_DROP_EXPORT_FAILED, 3, None)]
    calls, raising = _Calls(), _OtlpLike(raises=True)
    assert calls.wrap(raising).export(_spans("a", "b")) is SpanExportResult.FAILURE
    [(reason, count, error)] = calls.losses
    assert (reason, count, type(error)) == (semconv.SPAN_DROP_EXPORT_FAILED, 2, ConnectionError)


def test_a_raising_exporters_losses_add_up_and_are_logged_with_the_error_type() -> None:
    processor = DropCountingBatchSpanProcessor(_OtlpLike(raises=True))
    provider = _provider(processor)
    with capture_logs() as logs:
        _fill(provider, 2)
        processor.force_flush(10_000)
    [line] = [e for e in logs if e["event"] == "symfonic_otel.internal_failure"]
    assert line["kind"] == "span_export_failed" and line["error_type"] == "ConnectionError"
    assert processor.losses[semconv.SPAN_DROP_EXPORT_FAILED] == 2
    _fill(provider, 3)
    processor.force_flush(10_000)
    assert processor.losses[semconv.SPAN_DROP_EXPORT_FAILED] == 5
    provider.shutdown()


def test_another_exporters_failed_batch_is_counted_whole_without_splitting() -> None:
    calls, failing = _Calls(), _Failing()
    batch = _spans("a", "bad", "c", bad=1)
    assert calls.wrap(failing).export(batch) is SpanExportResult.FAILURE
    assert failing.calls == [3]
    assert calls.losses == [(semconv.SPAN_DROP_EXPORT_FAILED, 3, None)]
    assert calls.wrap(InMemorySpanExporter()).export(batch) is SpanExportResult.SUCCESS


def test_shutdown_and_flush_reach_the_wrapped_exporter_with_their_budget() -> None:
    calls, otlp, plain = _Calls(), _OtlpLike(), _Failing()
    calls.wrap(otlp).shutdown(timeout_millis=250)
    calls.wrap(plain).shutdown(timeout_millis=250)  # an exporter that takes no budget
    calls.wrap(otlp).shutdown()
    assert otlp.shutdown_with == [250, 30_000] and plain.shut == 1
    assert calls.wrap(otlp).force_flush(1234) is True
    assert calls.wrap(otlp).force_flush(5) is False
    calls.wrap(otlp).force_flush()
    assert otlp.flushes == [1234, 5, 30_000]


# --- the batch processor: admission, defaults, losses read and logged ---------------------------


class _Held(SpanExporter):
    """Blocks each export until released; counts what it exported in batches."""

    def __init__(self, *, blocked: bool = True) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        if not blocked:
            self.release.set()
        self.batches: list[int] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.entered.set()
        self.release.wait(10)
        self.batches.append(len(spans))
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


def _provider(processor: BatchSpanProcessor, sampler: Sampler | None = None) -> TracerProvider:
    provider = TracerProvider(sampler=sampler, shutdown_on_exit=False)
    provider.add_span_processor(processor)
    return provider


def _fill(provider: TracerProvider, count: int) -> None:
    tracer = provider.get_tracer("t")
    for index in range(count):
        tracer.start_span(f"s{index}").end()


def _blocked_with_waiting(exporter: _Held, processor: BatchSpanProcessor, waiting: int) -> Any:
    provider = _provider(processor)
    _fill(provider, 1)
    # A flush hands it to the worker, which then blocks exporting it.
    threading.Thread(target=processor.force_flush, args=(10_000,), daemon=True).start()
    assert exporter.entered.wait(10)
    _fill(provider, waiting)
    return provider


def test_a_full_queue_drops_counts_and_logs_once_and_a_handed_off_batch_frees_it() -> None:
    exporter = _Held()
    processor = DropCountingBatchSpanProcessor(
        exporter, max_queue_size=2, max_export_batch_size=2, schedule_delay_millis=60_000
    )
    with capture_logs() as logs:
        provider = _blocked_with_waiting(exporter, processor, 4)
    assert processor.losses == {"queue_full": 2, "export_failed": 0, "unencodable": 0}
    assert processor.dropped_spans == 2
    [line] = [e for e in logs if e["event"] == "symfonic_otel.internal_failure"]
    assert line["kind"] == "span_queue_full" and line["max_queue_size"] == 2
    assert line["hint"] == (
        "the collector is slow or down; raise OTEL_BSP_MAX_QUEUE_SIZE or fix export"
    )
    exporter.release.set()
    assert processor.force_flush(10_000)
    _fill(provider, 2)  # the exported spans left the queue: room for two again
    assert processor.force_flush(10_000)
    assert processor.dropped_spans == 2 and exporter.batches == [1, 2, 2]
    provider.shutdown()


def test_losses_of_a_down_backend_are_counted_and_logged_with_the_exporter() -> None:
    failing = _Failing()
    processor = DropCountingBatchSpanProcessor(failing, schedule_delay_millis=60_000)
    provider = _provider(processor)
    with capture_logs() as logs:
        _fill(provider, 3)
        processor.force_flush(10_000)
    assert processor.losses == {"queue_full": 0, "export_failed": 3, "unencodable": 0}
    [line] = [e for e in logs if e["event"] == "symfonic_otel.internal_failure"]
    assert line["kind"] == "span_export_failed" and line["spans"] == 3
    assert line["exporter"] == "_Failing"
    assert line["reason"].startswith("the exporter did not deliver the batch")
    provider.shutdown()
    assert failing.shut == 1


class _RecordOnly(Sampler):
    def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
        return SamplingResult(Decision.RECORD_ONLY)

    def get_description(self) -> str:
        return "record only"


def test_an_unsampled_span_is_neither_queued_nor_counted() -> None:
    exporter = _Held(blocked=False)
    processor = DropCountingBatchSpanProcessor(exporter, max_queue_size=1)
    provider = _provider(processor, _RecordOnly())
    _fill(provider, 5)
    processor.force_flush(10_000)
    assert exporter.batches == [] and processor.dropped_spans == 0
    provider.shutdown()


@pytest.mark.usefixtures("clean_otel_env")
def test_the_queue_and_batch_sizes_follow_the_otel_bsp_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "3")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "2")
    exporter = _Held()
    processor = DropCountingBatchSpanProcessor(exporter, schedule_delay_millis=60_000)
    provider = _blocked_with_waiting(exporter, processor, 4)
    assert processor.losses["queue_full"] == 1
    exporter.release.set()
    processor.force_flush(10_000)
    assert exporter.batches == [1, 2, 1]
    provider.shutdown()


@pytest.mark.usefixtures("clean_otel_env")
def test_a_queue_of_one_span_is_taken_from_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "1")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")
    exporter = _Held()
    processor = DropCountingBatchSpanProcessor(exporter, schedule_delay_millis=60_000)
    provider = _blocked_with_waiting(exporter, processor, 2)
    assert processor.losses["queue_full"] == 1
    exporter.release.set()
    provider.shutdown()


@pytest.mark.parametrize("reader", ["missing", "zero"])
@pytest.mark.usefixtures("clean_otel_env")
def test_without_the_sdks_reading_the_spec_defaults_apply(
    monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    for name in ("_default_max_queue_size", "_default_max_export_batch_size"):
        if reader == "missing":
            monkeypatch.delattr(BatchSpanProcessor, name)
        else:
            monkeypatch.setattr(BatchSpanProcessor, name, staticmethod(lambda: 0))
    exporter = _Held()
    processor = DropCountingBatchSpanProcessor(exporter, schedule_delay_millis=60_000)
    provider = _blocked_with_waiting(exporter, processor, 2049)
    assert processor.losses["queue_full"] == 1  # 2048 wait, one past is dropped
    exporter.release.set()
    processor.force_flush(10_000)
    assert exporter.batches == [1, 512, 512, 512, 512]
    provider.shutdown()


def test_spans_leave_after_the_schedule_delay_without_a_flush() -> None:
    exporter = _Held(blocked=False)
    processor = DropCountingBatchSpanProcessor(exporter, schedule_delay_millis=10)
    provider = _provider(processor)
    _fill(provider, 1)
    assert exporter.entered.wait(2)  # the SDK's default delay would be 5 s
    provider.shutdown()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_with_an_empty_queue() -> None:
    exporter = _Held()
    processor = DropCountingBatchSpanProcessor(
        exporter, max_queue_size=2, max_export_batch_size=2, schedule_delay_millis=60_000
    )
    provider = _blocked_with_waiting(exporter, processor, 2)  # the parent's queue is full
    pid = os.fork()
    if pid == 0:  # the child: the SDK emptied its queue, so two spans fit again
        code = 2
        try:
            _fill(provider, 2)
            code = 0 if processor.losses["queue_full"] == 0 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    _fill(provider, 1)
    assert processor.losses["queue_full"] == 1  # the parent's queue is still full
    exporter.release.set()
    provider.shutdown()
    assert os.waitstatus_to_exitcode(status) == 0
