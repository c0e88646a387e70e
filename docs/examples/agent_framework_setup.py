"""Record every run of a Microsoft Agent Framework agent: one adapter's three middleware."""

from symfonic_otel import configure_telemetry
from symfonic_otel.agent_framework import SymfonicAgentFramework

configure_telemetry()  # OTLP to OTEL_EXPORTER_OTLP_ENDPOINT, as every OTel SDK setup
middleware = SymfonicAgentFramework().middleware
# Agent(client=your_chat_client, name="support", middleware=middleware)
