from symfonic_otel import OTelCallbackHandler, configure_telemetry
from symfonic_otel.events import AgentEndEvent, AgentStartEvent

# Serve /metrics on 127.0.0.1:9464 for Prometheus to scrape; no OTLP exporter.
telemetry = configure_telemetry(service_name="support-agent", otlp=False, prometheus_port=9464)
handler = OTelCallbackHandler(agent_name="support")  # or LangChainCallbackHandler(...)

# Your agent calls the handler; here one run by hand.
handler.agent_start(AgentStartEvent(query="Hello?", run_id="run-1"))
handler.agent_end(AgentEndEvent(run_id="run-1", final_response="Hi!", duration_ms=5, node_count=1))

input("Serving http://127.0.0.1:9464/metrics, press Enter to stop\n")
telemetry.shutdown()
