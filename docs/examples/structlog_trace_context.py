import structlog
from opentelemetry.sdk.trace import TracerProvider

from symfonic_otel.logs import add_trace_context

structlog.configure(
    processors=[
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        add_trace_context,  # trace_id and span_id of the current span, on every line
        structlog.processors.TimeStamper(fmt="iso"),
        structlog.processors.JSONRenderer(),
    ]
)

tracer = TracerProvider().get_tracer("app")
with tracer.start_as_current_span("handle-request"):
    structlog.get_logger().info("request handled")  # {"event": ..., "trace_id": "…", ...}
