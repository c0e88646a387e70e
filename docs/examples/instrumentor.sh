OTEL_SERVICE_NAME=support-agent \
OTEL_TRACES_EXPORTER=console OTEL_METRICS_EXPORTER=console \
opentelemetry-instrument python docs/examples/instrumented_app.py
