"""Record every DSPy program run: one callback, in DSPy's settings."""

import dspy

from symfonic_otel import configure_telemetry
from symfonic_otel.dspy import SymfonicCallback

configure_telemetry()  # OTLP to OTEL_EXPORTER_OTLP_ENDPOINT, as every OTel SDK setup
dspy.configure(callbacks=[SymfonicCallback()])
