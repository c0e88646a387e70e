"""Record every prompt-function run of a Semantic Kernel kernel: two filters, registered once."""

from semantic_kernel import Kernel

from symfonic_otel import configure_telemetry
from symfonic_otel.semantic_kernel import SymfonicFilters

configure_telemetry()  # OTLP to OTEL_EXPORTER_OTLP_ENDPOINT, as every OTel SDK setup
kernel = SymfonicFilters().register(Kernel())
