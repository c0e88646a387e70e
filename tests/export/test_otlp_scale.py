"""OTLP metric export at fleet scale: no message too big to arrive, delta carries only the active.

The receivers refuse what a collector refuses by default: gRPC messages over 4 MiB
(``RESOURCE_EXHAUSTED``) and, over HTTP, bodies over the same size. ``configure_telemetry``'s
exporter must deliver every data point of 10,000 tenants through them (the tenants' data comes
from the real handler, one run each, the demo's workload shape), and with
``OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=delta`` an interval where a tenth of the
tenants ran carries histogram points for those runs only, while the per-tenant (observable)
counters stay cumulative (tests/export/test_otlp_temporality.py says why).
"""

from __future__ import annotations

import logging
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricsData

from symfonic_otel import semconv
from symfonic_otel.export.exporters import DEFAULT_OTLP_METRIC_BATCH
from symfonic_otel.export.setup import Telemetry, configure_telemetry
from tests.support.otlp_receiver import (
    GRPC_DEFAULT_MAX_RECEIVE,
    ExportMetricsServiceRequest,
    GrpcOtlpReceiver,
    HttpOtlpReceiver,
    OtlpReceiver,
    attributes,
    points_of,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from tenant_load import active_share, play_tenants, tenant_handler, tenant_ids

LIMIT = GRPC_DEFAULT_MAX_RECEIVE
TENANT = semconv.TENANT_ID


pytestmark = pytest.mark.usefixtures("clean_otel_env")


@pytest.fixture(params=["grpc", "http/protobuf"])
def limited(request: pytest.FixtureRequest) -> Iterator[OtlpReceiver]:
    """A receiver refusing messages over 4 MiB, on either transport."""
    server: OtlpReceiver = (
        GrpcOtlpReceiver(LIMIT) if request.param == "grpc" else HttpOtlpReceiver(LIMIT)
    )
    with server:
        yield server


def _configure(
    monkeypatch: pytest.MonkeyPatch, receiver: OtlpReceiver, **kwargs: Any
) -> tuple[Telemetry, InMemoryMetricReader]:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    mirror = InMemoryMetricReader()
    telemetry = configure_telemetry(
        otlp_protocol=receiver.protocol,  # type: ignore[arg-type]
        set_global=False,
        export_interval_ms=3_600_000,  # only explicit flushes export
        metric_readers=[mirror],
        **kwargs,
    )
    return telemetry, mirror


def _keys(data: MetricsData | None) -> set[tuple[str, frozenset[tuple[str, Any]]]]:
    assert data is not None
    return {
        (metric.name, frozenset(point.attributes.items()))
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        for point in metric.data.data_points
    }


def _received_keys(
    requests: list[ExportMetricsServiceRequest],
) -> list[tuple[str, frozenset[tuple[str, Any]]]]:
    return [
        (metric.name, frozenset(attributes(point.attributes).items()))
        for request in requests
        for rm in request.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        for point in getattr(metric, metric.WhichOneof("data")).data_points
    ]


def _padded_request(size: int) -> ExportMetricsServiceRequest:
    """A metrics request of exactly ``size`` serialized bytes (a padded resource attribute)."""
    request = ExportMetricsServiceRequest()
    resource = request.resource_metrics.add().resource
    pad = KeyValue(key="pad", value=AnyValue(string_value=""))
    resource.attributes.append(pad)
    length = size
    for _ in range(10):  # the length prefixes grow with the value: converge on the exact size
        resource.attributes[0].value.string_value = "x" * length
        length += size - request.ByteSize()
    assert request.ByteSize() == size
    return request


def _send(receiver: OtlpReceiver, request: ExportMetricsServiceRequest) -> bool:
    body = request.SerializeToString()
    if isinstance(receiver, GrpcOtlpReceiver):
        with grpc.insecure_channel(f"127.0.0.1:{receiver.port}") as channel:
            stub = metrics_service_pb2_grpc.MetricsServiceStub(channel)
            try:
                stub.Export(request, timeout=30)
            except grpc.RpcError as exc:
                assert exc.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
                return False
            return True
    post = urllib.request.Request(
        f"{receiver.endpoint}/v1/metrics",
        data=body,
        headers={"Content-Type": "application/x-protobuf"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(post, timeout=30):
            return True
    except urllib.error.HTTPError as exc:
        assert exc.code == 413
        return False


def test_the_receivers_take_4_mib_and_refuse_one_byte_more(limited: OtlpReceiver) -> None:
    assert _send(limited, _padded_request(LIMIT))
    assert not _send(limited, _padded_request(LIMIT + 1))
    assert len(limited.metric_requests()) == 1


def test_every_point_of_10000_tenants_arrives(
    monkeypatch: pytest.MonkeyPatch, limited: OtlpReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry, mirror = _configure(monkeypatch, limited)
    try:
        with caplog.at_level(logging.WARNING, logger="opentelemetry"):
            handler = tenant_handler(
                telemetry.tracer_provider, telemetry.meter_provider, max_tenants=10_000
            )
            tenants = tenant_ids(10_000)
            play_tenants(handler, tenants)
            assert telemetry.force_flush(timeout_millis=300_000)
        # This test's exporters are not shut down until below: an "already shutdown" line is an
        # earlier test's reader thread (same worker process) finishing late, not a refusal here.
        failures = [
            r.getMessage()
            for r in caplog.records
            if r.name.startswith("opentelemetry") and "already shutdown" not in r.getMessage()
        ]
        requests = limited.metric_requests()
        expected = _keys(mirror.get_metrics_data())
    finally:
        # The final export repeats every point (cumulative); it is let finish, so no reader of
        # this test is still exporting, to a shut-down exporter, while the next test listens.
        telemetry.shutdown(timeout_millis=120_000)
    assert not failures, failures[:3]

    received = _received_keys(requests)
    assert len(received) == len(set(received)), "a point arrived twice in one export"
    assert set(received) == expected
    assert not any(dict(attrs).get("otel.metric.overflow") for _, attrs in received)
    arrived_tenants = {dict(attrs).get(TENANT) for name, attrs in received}
    assert set(tenants) <= arrived_tenants, "a tenant's points are missing"
    assert max(request.ByteSize() for request in requests) <= LIMIT
    assert len(requests) >= len(expected) // DEFAULT_OTLP_METRIC_BATCH
    assert getattr(limited, "rejected", 0) == 0


def test_delta_export_carries_the_interval_only_histograms_and_changed_tenants(
    monkeypatch: pytest.MonkeyPatch, limited: OtlpReceiver
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
    telemetry, _ = _configure(monkeypatch, limited)
    with telemetry:
        handler = tenant_handler(
            telemetry.tracer_provider, telemetry.meter_provider, max_tenants=1_000
        )
        tenants = tenant_ids(1_000)
        before = play_tenants(handler, tenants)
        assert telemetry.force_flush(timeout_millis=120_000)
        first = len(limited.metric_requests())
        active = active_share(tenants, 0.1)
        runs = play_tenants(handler, active, runs_each=2, seed=5)
        assert telemetry.force_flush(timeout_millis=120_000)
        interval = points_of(limited.metric_requests()[first:])

    assert len(active) == 100
    # Histograms (no tenant) and synchronous counters are deltas: the interval's runs only.
    histograms = [p for p in interval if p.kind == "histogram"]
    assert histograms and {p.temporality for p in histograms} == {"DELTA"}
    durations = [p for p in histograms if p.name == semconv.AGENT_DURATION.name]
    assert sum(p.count or 0 for p in durations) == runs
    # The per-tenant counters send true deltas, and only for the series that changed: the 10 %
    # of tenants that ran, with exactly the interval's runs.
    per_tenant = [p for p in interval if TENANT in p.attributes]
    assert per_tenant and {(p.kind, p.temporality) for p in per_tenant} == {("sum", "DELTA")}
    assert {p.attributes[TENANT] for p in per_tenant} == set(active)
    counted = sum(p.value or 0 for p in per_tenant if p.name == semconv.AGENT_RUNS.name)
    assert counted == runs and before == len(tenants)


def test_the_delta_collector_recipe_accumulates_before_it_exports() -> None:
    """The fleet recipe: deltas summed back to cumulative before either Prometheus exporter."""
    import yaml

    recipe = Path(__file__).resolve().parents[2] / "dashboards/collector/otel-collector-delta.yaml"
    config = yaml.safe_load(recipe.read_text())
    metrics = config["service"]["pipelines"]["metrics"]
    processors = metrics["processors"]
    assert "deltatocumulative" in processors
    assert processors.index("deltatocumulative") < processors.index("batch")
    assert {"prometheus", "prometheusremotewrite"} <= set(metrics["exporters"])
    for pipeline in config["service"]["pipelines"].values():
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind, []):
                assert component in config[kind], f"{kind} {component} is not defined"
    # Idle tenants keep their accumulated series longer than the 3-day slow-burn window.
    for stale in (
        config["processors"]["deltatocumulative"]["max_stale"],
        config["exporters"]["prometheus"]["metric_expiration"],
    ):
        assert stale.endswith("h") and int(stale[:-1]) > 72


def _points_per_request(requests: list[ExportMetricsServiceRequest]) -> list[int]:
    return [
        sum(
            len(getattr(metric, metric.WhichOneof("data")).data_points)
            for rm in request.resource_metrics
            for sm in rm.scope_metrics
            for metric in sm.metrics
        )
        for request in requests
    ]


@pytest.mark.parametrize("batch", [1, 37])
def test_a_batch_size_override_bounds_every_message_exactly(
    monkeypatch: pytest.MonkeyPatch, limited: OtlpReceiver, batch: int
) -> None:
    telemetry, mirror = _configure(monkeypatch, limited, otlp_metric_batch_size=batch)
    with telemetry:
        handler = tenant_handler(
            telemetry.tracer_provider, telemetry.meter_provider, max_tenants=10
        )
        play_tenants(handler, tenant_ids(3))
        assert telemetry.force_flush(timeout_millis=60_000)
        requests = limited.metric_requests()
        expected = _keys(mirror.get_metrics_data())
    sizes = _points_per_request(requests)
    assert max(sizes) == batch  # full batches carry exactly the limit, none one more
    assert sum(sizes) == len(expected)
    assert set(_received_keys(requests)) == expected


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "2000", None])
def test_a_bad_batch_size_is_refused_naming_the_argument(bad: object) -> None:
    with pytest.raises(ValueError, match="otlp_metric_batch_size"):
        configure_telemetry(otlp=False, set_global=False, otlp_metric_batch_size=bad)  # type: ignore[arg-type]
