"""The silent-bail page for a LangGraph agent that OpenLLMetry already traces.

OpenLLMetry writes the run's LangChain metadata on its spans as
``traceloop.association.properties.*``: a ``tenant_id`` there is the processor's default tenant
attribute, so the application only passes its tenant in the run's metadata. A scripted model
stands in for the provider (it keeps calling a tool for one tenant; LangGraph's step guard ends
that run), so the file runs offline:

    python docs/examples/span_processor_langgraph.py
"""

from __future__ import annotations

import os
import warnings

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent
from opentelemetry.instrumentation.langchain import LangchainInstrumentor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from symfonic_otel import SilentBailSpanProcessor, configure_telemetry
from symfonic_otel.testing import ScriptedChatModel


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


def calls(n: int) -> list[AIMessage | str]:
    return [
        AIMessage("", tool_calls=[{"name": "lookup", "args": {"order": "A1"}, "id": f"c{i}"}])
        for i in range(n)
    ]


def serve(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> None:
    tracer_provider.add_span_processor(SilentBailSpanProcessor(meter_provider=meter_provider))
    instrumentor = LangchainInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            answering = create_react_agent(ScriptedChatModel([*calls(1), "It shipped."]), [lookup])
            looping = create_react_agent(ScriptedChatModel(calls(10)), [lookup])
        question = {"messages": [("user", "Where is order A1?")]}
        answering.invoke(question, config={"metadata": {"tenant_id": "acme"}})
        looping.invoke(question, config={"metadata": {"tenant_id": "globex"}, "recursion_limit": 6})
    finally:
        instrumentor.uninstrument()


def main() -> None:
    port = int(os.environ.get("METRICS_PORT", "9464"))
    telemetry = configure_telemetry(service_name="orders", otlp=False, prometheus_port=port)
    serve(telemetry.tracer_provider, telemetry.meter_provider)
    telemetry.shutdown()


if __name__ == "__main__":
    main()
