"""Outcome retention on your own providers: every failing run's trace, 1 % of the healthy ones.

The retention processor wraps your exporter (here the OTLP one, which reads
``OTEL_EXPORTER_OTLP_ENDPOINT``); the exemplar filter keeps exemplars to the traces it exports:

    export OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317
    python docs/examples/trace_retention_own_provider.py
"""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

from symfonic_otel import (
    KeptTraceExemplarFilter,
    OTelCallbackHandler,
    OutcomeRetentionSpanProcessor,
)
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent, ReactLoopEndEvent

tracer_provider = TracerProvider()
meter_provider = MeterProvider(
    metric_readers=[InMemoryMetricReader()],  # your reader: Prometheus, OTLP, ...
    exemplar_filter=KeptTraceExemplarFilter(tracer_provider),
)
retention = OutcomeRetentionSpanProcessor(
    OTLPSpanExporter(), healthy_trace_ratio=0.01, meter_provider=meter_provider
)
tracer_provider.add_span_processor(retention)
handler = OTelCallbackHandler(tracer_provider=tracer_provider, meter_provider=meter_provider)

for i in range(200):
    run = f"run-{i}"
    handler.agent_start(AgentStartEvent("Where is my order?", run))
    bails = i % 10 == 0  # one run in ten ends on a tool call without an answer
    handler.llm_end(LLMEndEvent("gpt-4o", "" if bails else "It shipped.", {}, run_id=run))
    if bails:
        handler.react_loop_end(
            ReactLoopEndEvent(run, 0, "list", True, 1, "tool_calls_with_no_text")
        )
    handler.agent_end(AgentEndEvent(run, "" if bails else "It shipped.", 900.0, 1))

tracer_provider.shutdown()  # decides what is still held, exports the kept traces
kept = retention.decisions.get(("kept", "outcome"), 0)
print(f"kept {kept} failing runs")  # kept 20 failing runs
meter_provider.shutdown()
