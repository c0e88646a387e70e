"""Record every run of an Agno agent: its hooks added by one adapter."""

from agno.agent import Agent

from symfonic_otel import configure_telemetry
from symfonic_otel.agno import SymfonicAgno

configure_telemetry()  # OTLP to OTEL_EXPORTER_OTLP_ENDPOINT, as every OTel SDK setup
agent = SymfonicAgno().instrument(Agent(name="support", instructions="Help the customer."))
