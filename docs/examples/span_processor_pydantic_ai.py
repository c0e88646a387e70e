"""The silent-bail page for agents traced by another instrumentation: Pydantic AI's own spans.

``SilentBailSpanProcessor`` goes on the tracer provider the agent's spans go through; it
records this package's run, silent-bail and stop-reason counters per tenant on the meter
provider you give it, where the shipped dashboards and alert rules read them. Scripted models
stand in for a provider here, so the file runs offline:

    python docs/examples/span_processor_pydantic_ai.py
"""

from __future__ import annotations

import os

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from pydantic_ai import Agent, UsageLimits
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from symfonic_otel import SilentBailSpanProcessor, configure_telemetry


def install(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> None:
    bail_processor = SilentBailSpanProcessor(
        meter_provider=meter_provider, tenant_attributes=("tenant.id",)
    )
    tracer_provider.add_span_processor(bail_processor)


def scripted(answers: bool) -> FunctionModel:
    """A model that calls ``add`` once and then answers, or calls it forever."""

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if answers and len(messages) > 1:
            return ModelResponse(parts=[TextPart("1 + 2 = 3")])
        return ModelResponse(parts=[ToolCallPart("add", {"a": 1, "b": 2})])

    return FunctionModel(reply)


def agent(tracer_provider: TracerProvider, answers: bool) -> Agent[None, str]:
    instrumentation = Instrumentation(
        settings=InstrumentationSettings(tracer_provider=tracer_provider, include_content=False)
    )
    calculator = Agent(scripted(answers), name="calculator", capabilities=[instrumentation])

    @calculator.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    return calculator


def ask(tracer_provider: TracerProvider, tenant: str, calculator: Agent[None, str]) -> str | None:
    """One request: the application's request span names the tenant, the agent runs inside."""
    tracer = tracer_provider.get_tracer("calculator-service")
    with tracer.start_as_current_span("POST /ask", attributes={"tenant.id": tenant}):
        try:
            return calculator.run_sync("1+2", usage_limits=UsageLimits(request_limit=3)).output
        except UsageLimitExceeded:  # the step cap: a silent bail for this tenant
            return None


def serve(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> None:
    install(tracer_provider, meter_provider)
    answering = agent(tracer_provider, answers=True)
    looping = agent(tracer_provider, answers=False)
    for _ in range(3):
        ask(tracer_provider, "acme", answering)
        ask(tracer_provider, "globex", looping)


def main() -> None:
    port = int(os.environ.get("METRICS_PORT", "9464"))
    telemetry = configure_telemetry(service_name="calculator", otlp=False, prometheus_port=port)
    serve(telemetry.tracer_provider, telemetry.meter_provider)
    telemetry.shutdown()


if __name__ == "__main__":
    main()
