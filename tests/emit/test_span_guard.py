"""Another span processor raising in ``on_start`` or ``on_end`` never reaches the caller of the
package's span guard: the span is dropped (start) or ended anyway (end), and the failure is
logged once, naming its kind and the phase that failed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import INVALID_SPAN
from structlog.testing import capture_logs

from symfonic_otel.emit import span_guard
from symfonic_otel.logs import FailureLog

KIND = "symfonic_otel.span_processor_failed"


class Raising(SpanProcessor):
    def __init__(self, phase: str) -> None:
        self.phase = phase

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.phase == "start":
            raise RuntimeError("processor failed on start")

    def on_end(self, span: ReadableSpan) -> None:
        if self.phase == "end":
            raise RuntimeError("processor failed on end")


@pytest.fixture
def failures(monkeypatch: pytest.MonkeyPatch) -> FailureLog:
    """A fresh once-per-kind log, so this test sees the first occurrence whatever ran before."""
    log = FailureLog()
    monkeypatch.setattr(span_guard, "_failures", log)
    return log


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.shutdown()


def _provider(phase: str, exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(Raising(phase))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def test_a_processor_raising_on_start_gives_a_non_recording_span_and_one_log_line(
    failures: FailureLog, exporter: InMemorySpanExporter
) -> None:
    tracer = _provider("start", exporter).get_tracer("t")
    with capture_logs() as logs:
        span = span_guard.start_span(tracer, "invoke_agent", attributes={"a": 1})
        again = span_guard.start_span(tracer, "invoke_agent")
    assert span is INVALID_SPAN
    assert again is INVALID_SPAN
    assert not span.is_recording()
    span_guard.end_span(span)  # the caller goes on as with any span
    assert failures.counts() == {KIND: 2}
    assert len(logs) == 1
    assert logs[0]["kind"] == KIND
    assert logs[0]["phase"] == "start"
    assert logs[0]["error_type"] == "RuntimeError"


def test_a_healthy_provider_starts_a_recording_span_with_the_arguments_given(
    failures: FailureLog, exporter: InMemorySpanExporter
) -> None:
    tracer = _provider("none", exporter).get_tracer("t")
    span = span_guard.start_span(tracer, "invoke_agent", attributes={"a": 1}, start_time=1_000)
    assert span.is_recording()
    span_guard.end_span(span, 5_000)
    (finished,) = exporter.get_finished_spans()
    assert finished.name == "invoke_agent"
    assert dict(finished.attributes or {}) == {"a": 1}
    assert (finished.start_time, finished.end_time) == (1_000, 5_000)
    assert failures.counts() == {}


def test_a_processor_raising_on_end_still_ends_the_span_at_the_time_given(
    failures: FailureLog, exporter: InMemorySpanExporter
) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.add_span_processor(Raising("end"))
    span = span_guard.start_span(provider.get_tracer("t"), "chat")
    with capture_logs() as logs:
        span_guard.end_span(span, 7_000)
    assert not span.is_recording()
    (finished,) = exporter.get_finished_spans()
    assert finished.end_time == 7_000
    assert failures.counts() == {KIND: 1}
    assert [(line["kind"], line["phase"]) for line in logs] == [(KIND, "end")]


def test_an_object_that_is_no_span_fails_in_its_caller() -> None:
    with pytest.raises(AttributeError):
        span_guard.end_span(object())  # type: ignore[arg-type]
