"""Record every invocation of an ADK app: one plugin, given to the app."""

from google.adk.agents import LlmAgent
from google.adk.apps import App

from symfonic_otel import configure_telemetry
from symfonic_otel.google_adk import SymfonicPlugin

configure_telemetry()  # OTLP to OTEL_EXPORTER_OTLP_ENDPOINT, as every OTel SDK setup
agent = LlmAgent(name="support", model="gemini-2.5-flash", instruction="Help the customer.")
app = App(name="support", root_agent=agent, plugins=[SymfonicPlugin()])
