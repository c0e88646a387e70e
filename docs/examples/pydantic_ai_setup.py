from pydantic_ai import Agent

from symfonic_otel import configure_telemetry
from symfonic_otel.pydantic_ai import SymfonicCapability

configure_telemetry()  # OTLP to OTEL_EXPORTER_OTLP_ENDPOINT, as every OTel SDK setup
agent = Agent("openai:gpt-4o-mini", capabilities=[SymfonicCapability()])
