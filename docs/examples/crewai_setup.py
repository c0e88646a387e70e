"""Record every agent execution of every crew: one listener on CrewAI's event bus."""

from symfonic_otel import configure_telemetry
from symfonic_otel.crewai import SymfonicListener

configure_telemetry()  # OTLP to OTEL_EXPORTER_OTLP_ENDPOINT, as every OTel SDK setup
listener = SymfonicListener()  # keep a reference; listener.close() unregisters it
