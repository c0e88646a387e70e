from agents import add_trace_processor

from symfonic_otel import configure_telemetry
from symfonic_otel.openai_agents import SymfonicTracingProcessor

configure_telemetry()  # OTLP to OTEL_EXPORTER_OTLP_ENDPOINT, as every OTel SDK setup
add_trace_processor(SymfonicTracingProcessor())
