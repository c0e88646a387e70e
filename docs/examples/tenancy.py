"""Per-tenant telemetry with a bounded number of active tenants (see docs/tenancy.md)."""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from symfonic_otel import OTelCallbackHandler, tenant_scope
from symfonic_otel.emit.budget import cardinality_view
from symfonic_otel.events import AgentEndEvent, AgentStartEvent

reader = InMemoryMetricReader()
provider = MeterProvider(metric_readers=[reader], views=[cardinality_view()])
handler = OTelCallbackHandler(
    meter_provider=provider,
    agent_name="support",
    max_tenants=10_000,  # tenants active at once; past it, new ones count as __overflow__
    tenant_idle_s=3 * 86_400 + 6 * 3_600,  # idle this long: the tenant's series are dropped
    tenant_histograms=False,  # True adds tenant.id to every histogram (costly)
)

with tenant_scope("acme"):  # the tenant of every run started in this block
    handler.agent_start(AgentStartEvent("Where is my order?", "run-1"))
    handler.agent_end(AgentEndEvent("run-1", "It ships today.", 1.2, 1))

data = reader.get_metrics_data()
runs = {
    dict(point.attributes or {}).get("tenant.id"): point.value
    for resource_metrics in (data.resource_metrics if data else ())
    for scope in resource_metrics.scope_metrics
    for metric in scope.metrics
    if metric.name == "symfonic.agent.runs"
    for point in metric.data.data_points
    if point.value
}
assert runs == {"acme": 1}
provider.shutdown()
