"""Span export that counts every span it loses, and loses only the spans it must.

The SDK's ``BatchSpanProcessor`` drops spans silently in three places: when its queue is full
(a de-duplicated warning), when the exporter fails (collector down: a log line, the batch gone)
and when one span of a batch cannot be encoded (the OTLP encoder raises or reports failure for the
whole batch: up to 512 spans of every tenant lost for one bad timestamp). Here:

* the queue bound is enforced in front of the SDK queue, so a full queue drops *and counts*;
* a failed batch is checked: if it does not encode (or is too large for one request), it is
  split in halves and each half exported again, down to single spans, so only the unencodable
  spans are lost; a batch that encodes but was not delivered is counted as ``export_failed``.

Every loss is counted by reason (``queue_full``, ``export_failed``, ``unencodable``), readable
from the processor and exported as the ``symfonic.telemetry.dropped_spans`` counter.
"""

from __future__ import annotations

import inspect
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Final

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from symfonic_otel import semconv
from symfonic_otel.logs import FailureLog

__all__ = ["DropCountingBatchSpanProcessor", "LossCountingExporter"]

# SDK defaults for OTEL_BSP_MAX_QUEUE_SIZE / OTEL_BSP_MAX_EXPORT_BATCH_SIZE, used only if the SDK
# stops exposing its own env readers.
_BSP_DEFAULT_QUEUE: Final = 2048
_BSP_DEFAULT_BATCH: Final = 512
# A request larger than a collector's default gRPC receive limit is split before it is retried.
_MAX_REQUEST_BYTES: Final = 4 * 1024 * 1024
DROP_REASONS: Final = (
    semconv.SPAN_DROP_QUEUE_FULL,
    semconv.SPAN_DROP_EXPORT_FAILED,
    semconv.SPAN_DROP_UNENCODABLE,
)

# What a loss line says happened; the exporter's own log line carries the status it received.
_LOSS_REASONS: Final = {
    semconv.SPAN_DROP_EXPORT_FAILED: "the exporter did not deliver the batch: the collector is "
    "unreachable, timed out or rejected it (the exporter's own log line gives the status)",
    semconv.SPAN_DROP_UNENCODABLE: "the span cannot be encoded as OTLP (a value OTLP cannot "
    "carry), so it was set aside and the rest of its batch exported",
}

Encodable = Callable[[Sequence[ReadableSpan]], bool]


def _otlp_encodable(spans: Sequence[ReadableSpan]) -> bool:
    """Whether the OTLP encoder accepts ``spans`` as one request of a size collectors take."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    try:
        size = len(encode_spans(spans).SerializeToString())
    except Exception:
        return False
    return size <= _MAX_REQUEST_BYTES


def _encoder_for(exporter: SpanExporter) -> Encodable | None:
    """The encodability check for OTLP exporters; other exporters are taken as they are."""
    module = type(exporter).__module__
    return _otlp_encodable if module.startswith("opentelemetry.exporter.otlp") else None


class LossCountingExporter(SpanExporter):
    """Wraps the real exporter: reports hand-offs, isolates unencodable spans, counts losses."""

    def __init__(
        self,
        inner: SpanExporter,
        on_handoff: Callable[[int], None],
        on_loss: Callable[[str, int, BaseException | None], None],
    ) -> None:
        self.inner = inner
        self._on_handoff = on_handoff
        self._on_loss = on_loss
        self._encodable = _encoder_for(inner)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self._on_handoff(len(spans))
        return self._export(list(spans))

    def _export(self, spans: list[ReadableSpan]) -> SpanExportResult:
        error: BaseException | None = None
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # the gRPC exporter raises on an unencodable batch
            result, error = SpanExportResult.FAILURE, exc
        if result is SpanExportResult.SUCCESS:
            return result
        if self._encodable is None or self._encodable(spans):
            self._on_loss(semconv.SPAN_DROP_EXPORT_FAILED, len(spans), error)
            return SpanExportResult.FAILURE
        if len(spans) == 1:
            self._on_loss(semconv.SPAN_DROP_UNENCODABLE, 1, error)
            return SpanExportResult.FAILURE
        middle = len(spans) // 2
        first, second = self._export(spans[:middle]), self._export(spans[middle:])
        ok = first is SpanExportResult.SUCCESS and second is SpanExportResult.SUCCESS
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    # ``timeout_millis`` in the signature lets the SDK's batch processor pass its remaining
    # shutdown budget through (it inspects the argument list).
    def shutdown(self, timeout_millis: float = 30_000) -> None:
        if "timeout_millis" in inspect.signature(self.inner.shutdown).parameters:
            self.inner.shutdown(timeout_millis=timeout_millis)  # type: ignore[call-arg]
        else:
            self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


class DropCountingBatchSpanProcessor(BatchSpanProcessor):
    """The SDK ``BatchSpanProcessor`` with every lost span counted (see the module docstring).

    A span is admitted only while fewer than ``max_queue_size`` spans are waiting (admitted and
    not yet handed to the exporter), otherwise it is dropped *and counted*; the SDK queue gets
    one extra batch of headroom so it never drops on its own. ``on_end`` stays non-blocking: a
    counter under a lock, never I/O.
    """

    def __init__(
        self,
        span_exporter: SpanExporter,
        *,
        max_queue_size: int | None = None,
        max_export_batch_size: int | None = None,
        schedule_delay_millis: float | None = None,
        failures: FailureLog | None = None,
    ) -> None:
        queue = max_queue_size
        if queue is None:
            queue = _bsp_default("_default_max_queue_size", _BSP_DEFAULT_QUEUE)
        batch = max_export_batch_size
        if batch is None:
            batch = _bsp_default("_default_max_export_batch_size", _BSP_DEFAULT_BATCH)
        batch = min(batch, queue)
        self._limit = queue
        self._pending = 0
        self._losses = dict.fromkeys(DROP_REASONS, 0)
        self._counter_lock = threading.Lock()
        self._failures = failures or FailureLog()
        self.exporter = span_exporter
        super().__init__(
            LossCountingExporter(span_exporter, self._handed_off, self._lost),
            max_queue_size=queue + batch,
            schedule_delay_millis=schedule_delay_millis,
            max_export_batch_size=batch,
        )
        if hasattr(os, "register_at_fork"):
            # The SDK empties its queue in a forked child; our count of waiting spans must follow.
            weak_self = weakref.ref(self)

            def _reset_in_child() -> None:
                processor = weak_self()
                if processor is not None:
                    processor._reset_after_fork()

            os.register_at_fork(after_in_child=_reset_in_child)

    @property
    def dropped_spans(self) -> int:
        """Spans lost since creation, whatever the reason."""
        return sum(self._losses.values())

    @property
    def losses(self) -> dict[str, int]:
        """Spans lost since creation, by reason (every reason present, zero or not)."""
        with self._counter_lock:
            return dict(self._losses)

    def on_end(self, span: ReadableSpan) -> None:
        if not (span.context and span.context.trace_flags.sampled):
            return
        with self._counter_lock:
            admitted = self._pending < self._limit
            if admitted:
                self._pending += 1
            else:
                self._losses[semconv.SPAN_DROP_QUEUE_FULL] += 1
        if not admitted:
            self._failures.report(
                "span_queue_full",
                None,  # pragma: no mutate: the default, spelled out
                max_queue_size=self._limit,
                hint="the collector is slow or down; raise OTEL_BSP_MAX_QUEUE_SIZE or fix export",
            )
            return
        super().on_end(span)

    def _handed_off(self, count: int) -> None:
        with self._counter_lock:
            self._pending = max(0, self._pending - count)

    def _lost(self, reason: str, count: int, error: BaseException | None) -> None:
        with self._counter_lock:
            self._losses[reason] += count  # every reason is counted from zero
        self._failures.report(
            f"span_{reason}",
            error,
            spans=count,
            exporter=type(self.exporter).__name__,
            reason=_LOSS_REASONS.get(reason, reason),  # pragma: no mutate: every reason has one
        )

    def _reset_after_fork(self) -> None:
        self._counter_lock = threading.Lock()
        self._pending = 0


def _bsp_default(reader_name: str, spec_default: int) -> int:
    """The SDK's own reading of an ``OTEL_BSP_*`` variable (a private helper of its batch
    processor), or the spec default if the SDK no longer has it."""
    reader = getattr(BatchSpanProcessor, reader_name, None)
    if callable(reader):
        value = reader()
        if isinstance(value, int) and value > 0:
            return value
    return spec_default
