"""Record every invocation of a Strands agent: one hook provider, given to the agent."""

from strands import Agent

from symfonic_otel import configure_telemetry
from symfonic_otel.strands import SymfonicHooks

configure_telemetry()  # OTLP to OTEL_EXPORTER_OTLP_ENDPOINT, as every OTel SDK setup
agent = Agent(name="support", system_prompt="Help the customer.", hooks=[SymfonicHooks()])
