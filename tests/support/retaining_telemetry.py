"""``configure_telemetry`` with outcome retention on, exporting traces to a real OTLP receiver."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from symfonic_otel.export.setup import Telemetry, configure_telemetry
from tests.support.otlp_receiver import GrpcOtlpReceiver


@contextmanager
def retaining_telemetry(
    monkeypatch: pytest.MonkeyPatch, healthy_trace_ratio: float = 0.01
) -> Iterator[tuple[GrpcOtlpReceiver, Telemetry]]:
    """Traces go over OTLP/gRPC (named by the environment, as an operator sets it) to a receiver
    the test reads; a Prometheus endpoint on a free port; healthy traces kept at the ratio."""
    with GrpcOtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
        telemetry = configure_telemetry(
            prometheus_port=0, set_global=False, healthy_trace_ratio=healthy_trace_ratio
        )
        assert telemetry.retention is not None
        yield receiver, telemetry
