"""``configure_telemetry``: every option reaches the exporter, reader or server it configures,
and every documented default holds, in the fast lane (the live OTLP and Prometheus tests are the
second line). Nothing here sends: the OTLP endpoint refuses connections and each configuration
is shut down at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
    OTLPMetricExporter as GrpcMetricExporter,
)
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
    OTLPMetricExporter as HttpMetricExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.sdk.metrics import (
    Counter,
    Histogram,
    ObservableCounter,
    ObservableGauge,
    ObservableUpDownCounter,
    UpDownCounter,
)
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    ConsoleMetricExporter,
    InMemoryMetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from symfonic_otel.export.exporters import DEFAULT_OTLP_METRIC_BATCH
from symfonic_otel.export.handle import Telemetry
from symfonic_otel.export.setup import configure_telemetry
from tests.support.otlp_receiver import CLEANUP_MS, refused_endpoint

pytestmark = pytest.mark.usefixtures("clean_otel_env")


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``configure_telemetry`` with nothing listening at the OTLP endpoint; shut down after."""
    made: list[Telemetry] = []

    def configure(*, endpoint: bool = True, **kwargs: Any) -> Telemetry:
        if endpoint:
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", refused_endpoint())
        kwargs.setdefault("set_global", False)
        telemetry = configure_telemetry(**kwargs)
        made.append(telemetry)
        return telemetry

    yield configure
    for telemetry in made:
        telemetry.shutdown(timeout_millis=CLEANUP_MS)


def _metric_exporter(telemetry: Telemetry) -> Any:
    [exporter] = [e for e in telemetry._exporters if "Metric" in type(e).__name__]
    return exporter


def _span_exporters(telemetry: Telemetry) -> list[Any]:
    return [e for e in telemetry._exporters if "Span" in type(e).__name__]


def _readers(telemetry: Telemetry) -> list[Any]:
    return list(telemetry.meter_provider._metric_readers)  # type: ignore[attr-defined]


# --- each option reaches its part ----------------------------------------------------------


def test_otlp_metric_batch_size_reaches_the_otlp_metric_exporter(configured: Any) -> None:
    telemetry = configured(otlp=True, otlp_metric_batch_size=77)
    assert _metric_exporter(telemetry)._max_export_batch_size == 77


def test_export_interval_ms_reaches_every_periodic_reader(configured: Any) -> None:
    telemetry = configured(otlp=True, console=True, export_interval_ms=4321)
    periodic = [r for r in _readers(telemetry) if isinstance(r, PeriodicExportingMetricReader)]
    assert len(periodic) == 2  # OTLP and console
    assert [r._export_interval_millis for r in periodic] == [4321, 4321]
    assert any(isinstance(r._exporter, ConsoleMetricExporter) for r in periodic)


def test_prometheus_host_is_where_the_endpoint_listens(configured: Any) -> None:
    telemetry = configured(prometheus_port=0, prometheus_host="127.0.0.2", endpoint=False)
    assert telemetry._prometheus_server is not None
    assert telemetry._prometheus_server.server_address[0] == "127.0.0.2"
    assert telemetry.prometheus_port


@pytest.mark.parametrize(
    ("protocol", "spans", "metrics"),
    [("http/protobuf", HttpSpanExporter, HttpMetricExporter)],
)
def test_otlp_protocol_reaches_both_signals(
    configured: Any, protocol: str, spans: type, metrics: type
) -> None:
    telemetry = configured(otlp=True, otlp_protocol=protocol)
    assert [type(e) for e in _span_exporters(telemetry)] == [spans]
    assert type(_metric_exporter(telemetry)) is metrics


def test_otlp_protocol_wins_over_the_signal_variables(
    configured: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
    telemetry = configured(otlp=True, otlp_protocol="http/protobuf")
    assert type(_metric_exporter(telemetry)) is HttpMetricExporter
    assert [type(e) for e in _span_exporters(telemetry)] == [HttpSpanExporter]


def test_span_processors_and_metric_readers_are_added(configured: Any) -> None:
    spans = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    telemetry = configured(
        otlp=False, span_processors=[SimpleSpanProcessor(spans)], metric_readers=[reader]
    )
    telemetry.tracer_provider.get_tracer("t").start_span("s").end()
    assert [s.name for s in spans.get_finished_spans()] == ["s"]
    assert reader in _readers(telemetry)


def test_service_name_and_resource_attributes_reach_the_resource(configured: Any) -> None:
    telemetry = configured(
        otlp=False, service_name="billing", resource_attributes={"deployment.environment": "qa"}
    )
    assert telemetry.resource.attributes["service.name"] == "billing"
    assert telemetry.resource.attributes["deployment.environment"] == "qa"


def test_service_name_wins_over_a_service_name_in_resource_attributes(configured: Any) -> None:
    # The dedicated argument is the more specific source, as OTEL_SERVICE_NAME is over
    # OTEL_RESOURCE_ATTRIBUTES; the other attributes still arrive.
    telemetry = configured(
        otlp=False,
        service_name="billing",
        resource_attributes={"service.name": "other", "deployment.environment": "qa"},
    )
    assert telemetry.resource.attributes["service.name"] == "billing"
    assert telemetry.resource.attributes["deployment.environment"] == "qa"
    without = configured(otlp=False, resource_attributes={"service.name": "other"})
    assert without.resource.attributes["service.name"] == "other"


# --- documented defaults -------------------------------------------------------------------


def test_without_variables_or_arguments_both_signals_go_over_otlp_grpc(configured: Any) -> None:
    telemetry = configured()
    assert [type(e) for e in _span_exporters(telemetry)] == [GrpcSpanExporter]
    assert type(_metric_exporter(telemetry)) is GrpcMetricExporter


def test_the_default_metric_batch_is_2000_points(configured: Any) -> None:
    assert DEFAULT_OTLP_METRIC_BATCH == 2_000
    telemetry = configured(otlp=True)
    assert _metric_exporter(telemetry)._max_export_batch_size == 2_000


def test_the_default_export_interval_is_the_sdks_60_seconds(configured: Any) -> None:
    telemetry = configured(otlp=True)
    [periodic] = [r for r in _readers(telemetry) if isinstance(r, PeriodicExportingMetricReader)]
    assert periodic._export_interval_millis == 60_000


def test_the_default_temporality_is_cumulative_for_every_instrument(configured: Any) -> None:
    preferred = _metric_exporter(configured(otlp=True))._preferred_temporality
    kinds = (Counter, UpDownCounter, Histogram, ObservableCounter, ObservableUpDownCounter)
    assert {preferred[kind] for kind in (*kinds, ObservableGauge)} == {
        AggregationTemporality.CUMULATIVE
    }


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_under_delta_counters_and_histograms_go_delta_as_the_sdk_says(
    configured: Any, monkeypatch: pytest.MonkeyPatch, protocol: str
) -> None:
    """The exporter's own preference, unchanged: the per-tenant counters follow ``Counter``'s."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
    preferred = _metric_exporter(configured(otlp=True, otlp_protocol=protocol))
    temporality = preferred._preferred_temporality
    assert temporality[ObservableCounter] is AggregationTemporality.DELTA
    assert temporality[Counter] is AggregationTemporality.DELTA
    assert temporality[Histogram] is AggregationTemporality.DELTA
    assert temporality[UpDownCounter] is AggregationTemporality.CUMULATIVE


def test_a_prometheus_port_with_the_general_endpoint_pushes_traces_not_metrics(
    configured: Any,
) -> None:
    telemetry = configured(prometheus_port=0)  # OTEL_EXPORTER_OTLP_ENDPOINT is set
    assert [type(e) for e in _span_exporters(telemetry)] == [GrpcSpanExporter]
    assert not [e for e in telemetry._exporters if "Metric" in type(e).__name__]


def test_an_empty_exporter_variable_means_otlp(
    configured: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", " , ")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", " , ")
    telemetry = configured()
    assert [type(e) for e in _span_exporters(telemetry)] == [GrpcSpanExporter]
    assert type(_metric_exporter(telemetry)) is GrpcMetricExporter


# --- precedence, both ways: each stronger source wins whichever value either holds --------------


@pytest.mark.parametrize(
    ("argument", "variable", "expected"),
    [
        ("http/protobuf", "grpc", (HttpSpanExporter, HttpMetricExporter)),
        ("grpc", "http/protobuf", (GrpcSpanExporter, GrpcMetricExporter)),
    ],
)
def test_otlp_protocol_wins_over_every_protocol_variable_either_way(
    configured: Any,
    monkeypatch: pytest.MonkeyPatch,
    argument: str,
    variable: str,
    expected: tuple[type, type],
) -> None:
    for name in ("PROTOCOL", "TRACES_PROTOCOL", "METRICS_PROTOCOL"):
        monkeypatch.setenv(f"OTEL_EXPORTER_OTLP_{name}", variable)
    telemetry = configured(otlp=True, otlp_protocol=argument)
    assert [type(e) for e in _span_exporters(telemetry)] == [expected[0]]
    assert type(_metric_exporter(telemetry)) is expected[1]


@pytest.mark.parametrize(
    ("signal", "general"), [("http/protobuf", "grpc"), ("grpc", "http/protobuf")]
)
def test_a_signals_protocol_variable_wins_over_the_general_one_either_way(
    configured: Any, monkeypatch: pytest.MonkeyPatch, signal: str, general: str
) -> None:
    kinds = {"grpc": (GrpcSpanExporter, GrpcMetricExporter)}
    kinds["http/protobuf"] = (HttpSpanExporter, HttpMetricExporter)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", general)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", signal)
    telemetry = configured(otlp=True)
    assert [type(e) for e in _span_exporters(telemetry)] == [kinds[signal][0]]
    assert type(_metric_exporter(telemetry)) is kinds[general][1]  # metrics: the general one


@pytest.mark.parametrize(
    ("argument", "variable", "expected"),
    [(1500, "9000", 1500), (9000, "1500", 9000), (None, "1500", 1500), (None, "9000", 9000)],
)
def test_export_interval_ms_wins_over_the_variable_which_is_used_without_it(
    configured: Any,
    monkeypatch: pytest.MonkeyPatch,
    argument: int | None,
    variable: str,
    expected: int,
) -> None:
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", variable)
    telemetry = configured(otlp=True, export_interval_ms=argument)
    periodic = [r for r in _readers(telemetry) if isinstance(r, PeriodicExportingMetricReader)]
    assert [r._export_interval_millis for r in periodic] == [expected]
