"""Record every run of a Haystack Agent: one tracer, installed as Haystack's."""

from symfonic_otel import configure_telemetry
from symfonic_otel.haystack import SymfonicTracer

configure_telemetry()  # OTLP to OTEL_EXPORTER_OTLP_ENDPOINT, as every OTel SDK setup
SymfonicTracer().install()  # Haystack's previous tracer still gets every span
