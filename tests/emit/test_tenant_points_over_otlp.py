"""The per-tenant counters' points as OTLP carries them: encoded by the OTLP exporter's own
encoder, every field an OTLP backend reads is there and right.

An in-memory reader hands Python objects around and never looks at a resource, a scope, a unit
or an exemplar's timestamp; the encoder does, so a point with a field missing or in the wrong unit
fails here as it would fail (or mislead) a collector.
"""

from __future__ import annotations

import time

import pytest
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.sdk.metrics import Counter, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader
from opentelemetry.sdk.resources import Resource

from symfonic_otel import semconv
from symfonic_otel._version import __version__
from symfonic_otel.emit.tenant_counters import TENANT_COUNTERS, TenantCounters
from symfonic_otel.emit.tenant_hub import hub_for
from symfonic_otel.emit.tenants import ActiveTenants

TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
SPAN_ID = 0xB7AD6B7169203331
SPECS = {spec.name: spec for spec in TENANT_COUNTERS}
DELTA = AggregationTemporality.DELTA


def _request(
    *, sdk_metric_in_our_scope: bool, delta: bool, other_scope: bool = False
) -> ExportMetricsServiceRequest:
    reader = InMemoryMetricReader(preferred_temporality={Counter: DELTA} if delta else {})
    provider = MeterProvider(
        metric_readers=[reader], resource=Resource.create({"service.name": "checkout"})
    )
    store = TenantCounters(ActiveTenants(), detail_cap=10)
    hub_for(provider).add_store(store)
    if sdk_metric_in_our_scope:
        meter = provider.get_meter(semconv.SCOPE_NAME, __version__)
        meter.create_counter("symfonic.test.sdk_counter").add(1)
    if other_scope:  # another library's metric, under the same version string as ours
        meter = provider.get_meter("another_library", __version__)
        meter.create_counter("another.counter").add(1)
    try:
        store.add(semconv.AGENT_RUNS.name, "acme", {semconv.TENANT_ID: "acme"}, 2)
        store.add(
            semconv.SILENT_BAILS.name,
            "acme",
            {semconv.TENANT_ID: "acme", "reason": "bail"},
            1,
            link=(TRACE_ID, SPAN_ID),
        )
        store.add(semconv.SILENT_BAILS.name, "globex", {semconv.TENANT_ID: "globex"}, 4)
        data = reader.get_metrics_data()
    finally:
        provider.shutdown()
    assert data is not None
    encoded = encode_metrics(data).SerializeToString()  # what the OTLP exporters send
    return ExportMetricsServiceRequest.FromString(encoded)


@pytest.mark.parametrize(
    ("sdk_metric_in_our_scope", "other_scope"),
    [(False, False), (True, False), (False, True)],
    ids=["alone", "beside-sdk", "beside-another-scope"],
)
@pytest.mark.parametrize("delta", [False, True], ids=["cumulative", "delta"])
def test_every_field_a_backend_reads_is_there(
    sdk_metric_in_our_scope: bool, other_scope: bool, delta: bool
) -> None:
    before = time.time_ns()
    request = _request(
        sdk_metric_in_our_scope=sdk_metric_in_our_scope, delta=delta, other_scope=other_scope
    )
    after = time.time_ns()
    (resource_metrics,) = request.resource_metrics
    assert resource_metrics.schema_url == ""
    others = [s for s in resource_metrics.scope_metrics if s.scope.name == "another_library"]
    assert [[m.name for m in s.metrics] for s in others] == (
        [["another.counter"]] if other_scope else []
    )
    resource = {a.key: a.value.string_value for a in resource_metrics.resource.attributes}
    assert resource["service.name"] == "checkout"  # the provider's resource, not a bare one
    ours = [s for s in resource_metrics.scope_metrics if s.scope.name == semconv.SCOPE_NAME]
    assert len(ours) == 1, "the package's scope once, the tenant counters inside it"
    (scope,) = ours
    assert scope.scope.version == __version__
    assert scope.schema_url == ""
    names = [metric.name for metric in scope.metrics]
    assert ("symfonic.test.sdk_counter" in names) is sdk_metric_in_our_scope
    tenant_metrics = {metric.name: metric for metric in scope.metrics if metric.name in SPECS}
    assert set(tenant_metrics) == {semconv.AGENT_RUNS.name, semconv.SILENT_BAILS.name}
    points = {}
    for name, metric in tenant_metrics.items():
        assert metric.description == SPECS[name].description
        assert metric.unit == SPECS[name].unit
        assert metric.sum.is_monotonic
        expected = 1 if delta else 2  # the enum values of DELTA and CUMULATIVE in OTLP
        assert metric.sum.aggregation_temporality == expected
        for point in metric.sum.data_points:
            attributes = {a.key: a.value.string_value for a in point.attributes}
            assert before <= point.start_time_unix_nano <= point.time_unix_nano <= after
            points[(name, attributes[semconv.TENANT_ID])] = point
    assert {key: point.as_double or point.as_int for key, point in points.items()} == {
        (semconv.AGENT_RUNS.name, "acme"): 2,
        (semconv.SILENT_BAILS.name, "acme"): 1,
        (semconv.SILENT_BAILS.name, "globex"): 4,
    }
    # The bail's span rides on its own series only, its time in nanoseconds since the epoch.
    (exemplar,) = points[(semconv.SILENT_BAILS.name, "acme")].exemplars
    assert exemplar.trace_id == TRACE_ID.to_bytes(16, "big")
    assert exemplar.span_id == SPAN_ID.to_bytes(8, "big")
    assert (exemplar.as_double or exemplar.as_int) == 1
    assert before <= exemplar.time_unix_nano <= after
    assert not points[(semconv.SILENT_BAILS.name, "globex")].exemplars
    assert not points[(semconv.AGENT_RUNS.name, "acme")].exemplars
