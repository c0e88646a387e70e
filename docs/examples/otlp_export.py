from symfonic_otel import OTelCallbackHandler, configure_telemetry
from symfonic_otel.events import AgentEndEvent, AgentStartEvent

# OTLP to OTEL_EXPORTER_OTLP_ENDPOINT (gRPC to localhost:4317 unless the OTEL_* variables say
# otherwise); spans leave in batches on a background thread, metrics every 60 s and at shutdown.
telemetry = configure_telemetry(service_name="support-agent", otlp=True)
handler = OTelCallbackHandler(agent_name="support")

handler.agent_start(AgentStartEvent(query="Hello?", run_id="run-1"))
handler.agent_end(AgentEndEvent(run_id="run-1", final_response="Hi!", duration_ms=5, node_count=1))

telemetry.shutdown()  # flushes spans, then metrics; bounded, also runs at interpreter exit
