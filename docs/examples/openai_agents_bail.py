"""An Agents SDK run that calls tools until ``max_turns``: what the processor records.

A scripted model stands in for a real one (no network); in-memory telemetry shows the result.
"""

from typing import Any

from agents import (
    Agent,
    MaxTurnsExceeded,
    Model,
    ModelResponse,
    Runner,
    Usage,
    function_tool,
    set_trace_processors,
)
from agents.tracing import generation_span
from openai.types.responses import ResponseFunctionToolCall

from symfonic_otel import tenant_scope
from symfonic_otel.openai_agents import SymfonicTracingProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry


class AlwaysCallsATool(Model):
    """A model that never answers: every turn asks for ``lookup`` again."""

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        with generation_span(model="scripted") as span:
            call = ResponseFunctionToolCall(
                type="function_call", call_id="c1", name="lookup", arguments='{"q": "x"}'
            )
            # Record the output, as the SDK's own models do: a blank answer is seen only here.
            span.span_data.output = [call.model_dump()]
            return ModelResponse(output=[call], usage=Usage(requests=1), response_id=None)

    async def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


@function_tool
def lookup(q: str) -> str:
    """Look something up."""
    return "nothing found"


telemetry = InMemoryTelemetry()
set_trace_processors([SymfonicTracingProcessor(handler=telemetry.handler())])  # ours only

agent = Agent(name="helper", model=AlwaysCallsATool(), tools=[lookup])
with tenant_scope("acme"):
    try:
        Runner.run_sync(agent, "What is the weather?", max_turns=3)
    except MaxTurnsExceeded:
        print("MaxTurnsExceeded")  # MaxTurnsExceeded

bails = telemetry.value("symfonic.react.silent_bails", {"tenant.id": "acme"})
run = telemetry.span("invoke_agent helper").attributes or {}
print("silent bails:", int(bails))  # silent bails: 1
print("stop reason:", run["symfonic.run.stop_reason"])  # stop reason: recursion_limit
print("outcome:", run["symfonic.run.outcome"])  # outcome: error
