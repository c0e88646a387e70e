"""OTLP push for a fleet: bounded messages, compression, delta histograms.

Run with a collector at OTEL_EXPORTER_OTLP_ENDPOINT (default localhost:4317 over gRPC).
"""

import os

from symfonic_otel import OTelCallbackHandler, configure_telemetry
from symfonic_otel.events import AgentEndEvent, AgentStartEvent

# Standard OpenTelemetry variables, read by the official exporters (set them in the deployment;
# they are set here only to show them).
os.environ.setdefault("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
# lowmemory: counters (the per-tenant ones included) and histograms as deltas.
os.environ.setdefault("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "lowmemory")

telemetry = configure_telemetry(
    service_name="support-agent",
    # At most this many data points per OTLP message (the default, 2,000, is about 0.5 MB).
    otlp_metric_batch_size=2_000,
)
handler = OTelCallbackHandler(max_tenants=10_000)

# One run of tenant "acme" (an agent framework adapter sends these events for you).
handler.agent_start(AgentStartEvent(query="Where is my order?", run_id="r1"), tenant_id="acme")
handler.agent_end(
    AgentEndEvent(run_id="r1", final_response="Shipped.", duration_ms=900.0, node_count=1)
)

telemetry.shutdown()
