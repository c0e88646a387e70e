"""What ``Telemetry.force_flush`` and ``Telemetry.shutdown`` report: the return value, the log
lines (which signal failed, which timed out, with what budget, what was lost) and the exporters
whose retries a late shutdown stops.

Real SDK providers and readers throughout; the only scripted parts are a span exporter whose
shutdown hangs (a collector that never answers) and metric readers that fail on cue.
"""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans
from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
    OTLPMetricExporter as HttpMetrics,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExporter, MetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from structlog.testing import capture_logs

from symfonic_otel.export.handle import Telemetry, explain_metrics_shutdown
from symfonic_otel.export.prometheus import start_prometheus
from symfonic_otel.export.span_export import DropCountingBatchSpanProcessor
from symfonic_otel.logs import FailureLog

pytestmark = pytest.mark.usefixtures("clean_otel_env")


class HangingSpanProcessor(SpanProcessor):
    """A span processor whose flush and shutdown wait for a collector that never answers."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        self.release.wait(5)
        return True

    def shutdown(self) -> None:
        self.entered.set()
        self.release.wait(5)


class RefusingSpanExporter(SpanExporter):
    """A span exporter whose collector refuses every batch."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.FAILURE


class RaisingReader(InMemoryMetricReader):
    """A metric reader whose collections fail (an exporter that raises)."""

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        raise RuntimeError("http://user:secret@collector:4318 refused")

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        raise RuntimeError("http://user:secret@collector:4318 refused")


class RecordingReader(InMemoryMetricReader):
    """A metric reader that remembers the budget the meter provider gave its shutdown."""

    def __init__(self) -> None:
        super().__init__()
        self.shutdown_budgets: list[float] = []

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self.shutdown_budgets.append(timeout_millis)
        super().shutdown(timeout_millis=timeout_millis, **kwargs)


def _telemetry(
    *,
    span_exporter: SpanExporter | None = None,
    hanging: SpanProcessor | None = None,
    readers: Sequence[MetricReader] = (),
    exporters: Sequence[SpanExporter | MetricExporter] = (),
    batch: Sequence[DropCountingBatchSpanProcessor] = (),
) -> Telemetry:
    resource = Resource.create({"service.name": "reports"})
    tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    if span_exporter is not None:
        tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    if hanging is not None:
        tracer_provider.add_span_processor(hanging)
    for processor in batch:
        tracer_provider.add_span_processor(processor)
    meter_provider = MeterProvider(
        resource=resource,
        metric_readers=list(readers) or [InMemoryMetricReader()],
        shutdown_on_exit=False,
    )
    return Telemetry(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        resource=resource,
        span_processors=batch,
        exporters=exporters,
        prometheus_server=None,
        prometheus_thread=None,
        is_global=False,
    )


@pytest.fixture
def hanging() -> Iterator[HangingSpanProcessor]:
    processor = HangingSpanProcessor()
    yield processor
    processor.release.set()  # the helper thread ends with the test


def _lines(logs: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [line for line in logs if line["event"] == f"symfonic_otel.{event}"]


# --- a clean shutdown -----------------------------------------------------------------------------


def test_a_clean_shutdown_returns_true_and_logs_one_info_line_with_zero_losses() -> None:
    spans = InMemorySpanExporter()
    telemetry = _telemetry(span_exporter=spans)
    with telemetry.tracer_provider.get_tracer("t").start_as_current_span("work"):
        pass
    with capture_logs() as logs:
        assert telemetry.shutdown(timeout_millis=2_000) is True
    [summary] = _lines(logs, "telemetry_shutdown")
    assert summary["log_level"] == "info"
    assert summary["clean"] is True
    assert summary["dropped_spans"] == 0
    assert {k: v for k, v in summary.items() if k.startswith("dropped_spans_")} == {
        "dropped_spans_queue_full": 0,
        "dropped_spans_export_failed": 0,
        "dropped_spans_unencodable": 0,
    }
    assert summary["abandoned_runs"] == 0
    assert 0 <= summary["elapsed_ms"] < 2_000
    assert not _lines(logs, "shutdown_timed_out") and not _lines(logs, "shutdown_failed")
    assert [span.name for span in spans.get_finished_spans()] == ["work"]


def test_shutdown_is_idempotent_and_answers_the_first_result_again() -> None:
    telemetry = _telemetry()
    assert telemetry.is_shut_down is False
    assert telemetry.shutdown(timeout_millis=1_000) is True
    assert telemetry.is_shut_down is True
    with capture_logs() as logs:
        assert telemetry.shutdown(timeout_millis=1_000) is True
    assert logs == []  # nothing done twice, nothing logged twice


def test_a_shutdown_asked_while_one_runs_answers_false_without_waiting(
    hanging: HangingSpanProcessor,
) -> None:
    telemetry = _telemetry(hanging=hanging)
    first = threading.Thread(target=telemetry.shutdown, kwargs={"timeout_millis": 2_000})
    first.start()
    try:
        assert hanging.entered.wait(5)
        assert telemetry.is_shut_down is True  # from the moment it starts
        assert telemetry.shutdown(timeout_millis=2_000) is False  # in progress: not yet clean
    finally:
        hanging.release.set()
        first.join()


def test_a_shut_down_handle_is_no_longer_held_for_interpreter_exit() -> None:
    """Each handle registers its exit shutdown; a handle shut down lets it go (no leak)."""
    telemetry = _telemetry()
    telemetry.shutdown(timeout_millis=1_000)
    handle = weakref.ref(telemetry)
    del telemetry
    gc.collect()
    assert handle() is None


def test_the_exit_hook_shuts_the_handle_down() -> None:
    """What ``atexit`` calls at interpreter exit (run for real by the process tests)."""
    telemetry = _telemetry()
    with capture_logs() as logs:
        telemetry._shutdown_at_exit()
    assert telemetry.is_shut_down is True
    assert [line["clean"] for line in _lines(logs, "telemetry_shutdown")] == [True]


def test_the_context_manager_shuts_down_at_the_end_of_the_block() -> None:
    with _telemetry() as telemetry:
        assert telemetry.is_shut_down is False
    assert telemetry.is_shut_down is True


def test_repr_names_the_service_the_port_and_the_state() -> None:
    telemetry = _telemetry()
    assert repr(telemetry) == (
        "Telemetry(service_name='reports', prometheus_port=None, shut_down=False)"
    )
    telemetry.shutdown(timeout_millis=1_000)
    assert repr(telemetry).endswith("shut_down=True)")


# --- flushes --------------------------------------------------------------------------------------


def test_force_flush_returns_true_when_both_signals_flushed() -> None:
    spans = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    telemetry = _telemetry(span_exporter=spans, readers=[reader])
    with capture_logs() as logs:
        assert telemetry.force_flush(timeout_millis=1_000) is True
    assert logs == []
    telemetry.shutdown(timeout_millis=1_000)


def test_force_flush_after_shutdown_returns_false() -> None:
    telemetry = _telemetry()
    telemetry.shutdown(timeout_millis=1_000)
    assert telemetry.force_flush(timeout_millis=1_000) is False


def test_a_flush_past_its_deadline_names_the_late_signal_and_the_budget(
    hanging: HangingSpanProcessor,
) -> None:
    telemetry = _telemetry(hanging=hanging)
    started = time.monotonic()
    with capture_logs() as logs:
        assert telemetry.force_flush(timeout_millis=50) is False
    assert time.monotonic() - started < 0.5  # the caller waits the budget, not the hang
    [late] = _lines(logs, "force_flush_timed_out")
    assert late["log_level"] == "warning"
    assert late["signals"] == ["traces"]  # the metrics flushed in time
    assert late["timeout_ms"] == 50
    [helper] = [t for t in threading.enumerate() if t.name == "symfonic-otel-force_flush-traces"]
    assert helper.daemon  # a flush stuck on a dead collector never keeps the process alive
    hanging.release.set()
    telemetry.shutdown(timeout_millis=1_000)


def test_a_flush_that_raises_names_the_signal_and_returns_false() -> None:
    telemetry = _telemetry(readers=[RaisingReader()])
    with capture_logs() as logs:
        assert telemetry.force_flush(timeout_millis=1_000) is False
    [failed] = _lines(logs, "force_flush_failed")
    assert (failed["log_level"], failed["signal"]) == ("warning", "metrics")
    assert failed["error_type"] == "Exception"  # the SDK's aggregate error: its type only
    assert "failed_readers" not in failed  # the metric explanation is for shutdown only
    assert not _lines(logs, "force_flush_timed_out")
    with capture_logs():
        telemetry.shutdown(timeout_millis=1_000)


# --- shutdowns that fail --------------------------------------------------------------------------


def test_traces_late_at_shutdown_get_three_fifths_of_the_budget_and_a_warning(
    hanging: HangingSpanProcessor,
) -> None:
    reader = RecordingReader()
    telemetry = _telemetry(hanging=hanging, readers=[reader])
    with capture_logs() as logs:
        assert telemetry.shutdown(timeout_millis=200) is False
    [late] = _lines(logs, "shutdown_timed_out")
    assert late["signals"] == ["traces"]
    assert 60 <= late["timeout_ms"] <= 120  # 60 % of the 200 ms, less the time spent before
    [summary] = _lines(logs, "telemetry_shutdown")
    assert (summary["log_level"], summary["clean"], summary["dropped_spans"]) == (
        "warning",
        False,
        0,
    )
    assert 100 <= summary["elapsed_ms"] < 2_000  # bounded: never the hung processor's 5 s
    assert len(reader.shutdown_budgets) == 1  # the metrics still got the rest of the budget


def test_late_traces_stop_the_retries_of_the_span_exporters_only(
    hanging: HangingSpanProcessor,
) -> None:
    """The retry back-off events are set; nothing is closed under an export in flight."""
    grpc_spans, http_spans, http_metrics = GrpcSpans(), HttpSpans(), HttpMetrics()
    telemetry = _telemetry(hanging=hanging, exporters=[grpc_spans, http_spans, http_metrics])
    try:
        assert telemetry.shutdown(timeout_millis=100) is False
        assert grpc_spans._shutdown_in_progress.is_set()
        assert http_spans._client._shutdown_event.is_set()
        assert not http_metrics._client._shutdown_event.is_set()  # metrics shut down in time
        assert (grpc_spans._shutdown, http_spans._shutdown) == (False, False)  # not closed
    finally:
        for exporter in (grpc_spans, http_spans, http_metrics):
            exporter.shutdown()


def test_late_traces_leave_an_exporter_without_retry_events_to_its_own_timeout(
    hanging: HangingSpanProcessor,
) -> None:
    """An exporter with neither the OTLP exporters' events nor their client: nothing to stop,
    and the late shutdown still reports rather than raising."""
    plain = InMemorySpanExporter()
    telemetry = _telemetry(hanging=hanging, exporters=[plain])
    with capture_logs() as logs:
        assert telemetry.shutdown(timeout_millis=100) is False
    assert [line["signals"] for line in _lines(logs, "shutdown_timed_out")] == [["traces"]]
    assert [line["clean"] for line in _lines(logs, "telemetry_shutdown")] == [False]


def test_a_failed_metrics_shutdown_stops_the_metric_exporters_and_names_the_reader() -> None:
    grpc_spans, http_metrics = GrpcSpans(), HttpMetrics()
    telemetry = _telemetry(
        readers=[InMemoryMetricReader(), RaisingReader()], exporters=[grpc_spans, http_metrics]
    )
    try:
        with capture_logs() as logs:
            assert telemetry.shutdown(timeout_millis=1_000) is False
        [failed] = _lines(logs, "shutdown_failed")
        assert (failed["log_level"], failed["signal"]) == ("warning", "metrics")
        assert failed["failed_readers"] == ["RaisingReader"]
        assert failed["reason"] == "these readers raised during their final collection or export"
        assert "secret" not in str(failed)  # the reader's error text stays out of the line
        assert http_metrics._client._shutdown_event.is_set()
        assert not grpc_spans._shutdown_in_progress.is_set()  # the traces ended in time
        [summary] = _lines(logs, "telemetry_shutdown")
        assert (summary["log_level"], summary["clean"]) == ("warning", False)
    finally:
        grpc_spans.shutdown()
        http_metrics.shutdown()


def test_the_meter_provider_may_wait_longer_than_the_budget_for_the_export_in_flight() -> None:
    """The SDK closes a reader's exporter only after its export ends: at least 30 s for it."""
    reader = RecordingReader()
    telemetry = _telemetry(readers=[reader])
    assert telemetry.shutdown(timeout_millis=500) is True
    [budget] = reader.shutdown_budgets
    assert 29_000 < budget <= 30_000


def test_the_metrics_get_the_rest_of_a_long_budget() -> None:
    """Past the SDK's own 30 s wait, the metric readers are given what remains of the budget."""
    reader = RecordingReader()
    telemetry = _telemetry(readers=[reader])
    assert telemetry.shutdown(timeout_millis=60_000) is True
    [budget] = reader.shutdown_budgets
    assert 59_000 < budget <= 60_000


def test_spans_lost_make_the_shutdown_unclean_and_are_counted_by_reason() -> None:
    """Spans a collector refused during the final flush: the shutdown says so, by reason."""
    processor = DropCountingBatchSpanProcessor(RefusingSpanExporter(), failures=FailureLog())
    telemetry = _telemetry(batch=[processor])
    tracer = telemetry.tracer_provider.get_tracer("t")
    for name in ("one", "two", "three"):
        with tracer.start_as_current_span(name):
            pass
    with capture_logs() as logs:
        assert telemetry.shutdown(timeout_millis=2_000) is False
    assert telemetry.dropped_spans == telemetry.span_losses["export_failed"] == 3
    [summary] = _lines(logs, "telemetry_shutdown")
    assert (summary["log_level"], summary["clean"]) == ("warning", False)
    assert summary["dropped_spans"] == summary["dropped_spans_export_failed"] == 3
    assert summary["dropped_spans_queue_full"] == summary["dropped_spans_unencodable"] == 0


# --- the explanation of a metrics shutdown failure ------------------------------------------------


def test_a_reader_that_raised_beside_one_out_of_time_is_reported_as_raising() -> None:
    error = Exception(
        "MeterProvider.shutdown failed because the following metric readers failed:\n"
        "PeriodicExportingMetricReader: Exception(\"Didn't get to execute, deadline already "
        'exceeded")\n'
        "RaisingReader: RuntimeError('refused')\n"
        "not an identifier: whatever"
    )
    assert explain_metrics_shutdown(error) == {
        "failed_readers": ["PeriodicExportingMetricReader", "RaisingReader"],
        "reason": "these readers raised during their final collection or export",
    }


def test_a_reader_is_named_even_when_its_error_text_holds_a_colon() -> None:
    """Only the text before the first ``": "`` names the reader; the error may say anything."""
    error = Exception(
        "MeterProvider.shutdown failed because the following metric readers failed:\n"
        "RaisingReader: RuntimeError('connect: connection refused')"
    )
    assert explain_metrics_shutdown(error)["failed_readers"] == ["RaisingReader"]


def test_the_first_line_of_the_sdk_error_is_never_taken_for_a_reader() -> None:
    error = Exception("Header: deadline already exceeded\nReader: deadline already exceeded")
    assert explain_metrics_shutdown(error)["failed_readers"] == ["Reader"]
    assert explain_metrics_shutdown(error)["reason"] == (
        "the shutdown budget ran out before these readers ran: an earlier reader's final export "
        "waited on an unreachable or slow OTLP collector"
    )


# --- timeouts -------------------------------------------------------------------------------------


@pytest.mark.parametrize("timeout", [0, 0.0, 1.5])
def test_a_zero_or_fractional_timeout_is_accepted(timeout: float) -> None:
    telemetry = _telemetry()
    assert telemetry.force_flush(timeout_millis=timeout) in (True, False)
    telemetry.shutdown(timeout_millis=timeout)
    assert telemetry.is_shut_down is True


def test_a_bad_timeout_message_shows_the_value() -> None:
    telemetry = _telemetry()
    with pytest.raises(ValueError, match=r"^timeout_millis must be a number >= 0, got -1$"):
        telemetry.shutdown(timeout_millis=-1)
    with pytest.raises(ValueError, match=r"^timeout_millis must be a number >= 0, got '5'$"):
        telemetry.shutdown_on_sigterm(timeout_millis="5")  # type: ignore[arg-type]
    telemetry.shutdown(timeout_millis=1_000)


@pytest.mark.parametrize("timeout", [True, float("nan")], ids=["a bool", "NaN"])
def test_a_bool_or_nan_is_no_timeout(timeout: float) -> None:
    telemetry = _telemetry()
    with pytest.raises(ValueError, match=r"^timeout_millis must be a number >= 0, got "):
        telemetry.force_flush(timeout_millis=timeout)
    telemetry.shutdown(timeout_millis=1_000)


def test_a_prometheus_server_that_fails_to_close_is_logged_and_the_shutdown_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _reader, _endpoint, server, thread = start_prometheus("127.0.0.1", 0)

    def failing_close() -> None:
        raise OSError("the socket could not be closed")

    monkeypatch.setattr(server, "server_close", failing_close)
    telemetry = _telemetry()
    telemetry._prometheus_server, telemetry._prometheus_thread = server, thread
    with capture_logs() as logs:
        assert telemetry.shutdown(timeout_millis=1_000) is True
    [line] = _lines(logs, "prometheus_close_failed")
    assert (line["log_level"], line["error_type"]) == ("warning", "OSError")
    assert "could not be closed" not in str(line)  # the error's type and place, not its text
    assert not thread.is_alive()  # stopped before the close failed
    monkeypatch.undo()
    server.server_close()
