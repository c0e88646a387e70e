from smolagents import InferenceClientModel, ToolCallingAgent

from symfonic_otel import configure_telemetry
from symfonic_otel.smolagents import SymfonicSmolagents

configure_telemetry()  # OTLP to OTEL_EXPORTER_OTLP_ENDPOINT, as every OTel SDK setup
symfonic = SymfonicSmolagents()  # one per process; its callbacks go to every agent
agent = ToolCallingAgent(
    tools=[], model=InferenceClientModel(), name="helper", step_callbacks=symfonic.step_callbacks()
)
