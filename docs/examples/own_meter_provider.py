from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from symfonic_otel import OTelCallbackHandler
from symfonic_otel.emit.budget import cardinality_view, required_cardinality_limit

# Two handlers of 500 tenants each on one MeterProvider: raise the SDK's per-instrument limit
# (2,000 attribute sets by default) for this package's instruments only.
limit = required_cardinality_limit(max_tenants=500, handlers=2)
reader = InMemoryMetricReader()  # your reader: Prometheus, OTLP, ...
provider = MeterProvider(metric_readers=[reader], views=[cardinality_view(limit)])

support = OTelCallbackHandler(meter_provider=provider, agent_name="support", max_tenants=500)
billing = OTelCallbackHandler(meter_provider=provider, agent_name="billing", max_tenants=500)
print(limit)  # 25100
provider.shutdown()
