"""The demo's way out: the endpoints it names read like the SDK reads them (an unknown signal
protocol falls back to gRPC, spaces around an endpoint are no part of it), the bounded flush
stops waiting at the first export warning, and only warnings are counted."""

from __future__ import annotations

import logging
import threading

import pytest

from symfonic_otel.demo.flush import bounded_flush, otlp_endpoints, quiet_logs

_ENDPOINT_VARIABLES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
)


@pytest.fixture(autouse=True)
def _no_otlp_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in _ENDPOINT_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


def test_an_unknown_signal_protocol_falls_back_to_grpc_not_to_the_general_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "carrier-pigeon")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    assert otlp_endpoints() == (
        ["http://localhost:4317", "http://localhost:4318/v1/metrics"],
        False,
    )


def test_spaces_around_a_signal_endpoint_are_no_part_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "  http://collector:4317 \n")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://collector:4317")
    assert otlp_endpoints() == (["http://collector:4317"], True)


class _WarnsThenHangs:
    """A flush that logs an export failure, then hangs in its retries (up to 1 s)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.finished = threading.Event()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        logging.getLogger("opentelemetry.exporter.otlp").warning("Failed to export")
        self.release.wait(1.0)
        self.finished.set()
        return True


def test_the_flush_stops_waiting_at_the_first_export_warning() -> None:
    telemetry = _WarnsThenHangs()
    with quiet_logs() as warnings:
        try:
            assert bounded_flush(telemetry, warnings, 3.0) is False
            # Returned while the flush still hangs: it did not wait for the retries.
            assert not telemetry.finished.is_set()
        finally:
            telemetry.release.set()


def test_only_the_sdk_s_warnings_and_errors_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    logger = logging.getLogger("opentelemetry.sdk.example")
    monkeypatch.setattr(logger, "level", logging.DEBUG)
    with quiet_logs() as warnings:
        logger.debug("a detail")
        logger.info("exported")
        assert warnings.count == 0
        logger.warning("retrying")
        logger.error("failed")
        assert warnings.count == 2
