"""An Agno agent past its soft ``tool_call_limit``: what the adapter records.

A scripted ``Model`` stands in for a real model (no network); in-memory telemetry shows the
result. Agno refuses the calls past the limit and the model answers: Agno raises nothing.
"""

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

from agno.agent import Agent
from agno.models.base import Model
from agno.models.response import ModelResponse

from symfonic_otel import tenant_scope
from symfonic_otel.agno import SymfonicAgno
from symfonic_otel.testing.telemetry import InMemoryTelemetry


@dataclass
class CallsThreeTools(Model):
    id: str = "scripted"

    def _turn(self, messages: Any) -> ModelResponse:
        if sum(1 for m in messages if m.role == "tool") >= 3:
            return ModelResponse(role="assistant", content="Probably sunny.")
        function = {"name": "lookup", "arguments": json.dumps({"q": "x"})}
        call = {"id": f"call-{len(messages)}", "type": "function", "function": function}
        return ModelResponse(role="assistant", tool_calls=[call])

    def invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._turn(kwargs["messages"])

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._turn(kwargs["messages"])

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        yield self._turn(kwargs["messages"])

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        yield self._turn(kwargs["messages"])

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response


def lookup(q: str) -> str:
    """Look something up."""
    return "nothing found"


telemetry = InMemoryTelemetry()
adapter = SymfonicAgno(handler=telemetry.handler())
agent = adapter.instrument(
    Agent(
        model=CallsThreeTools(), tools=[lookup], name="helper", tool_call_limit=2, telemetry=False
    )
)

with tenant_scope("acme"):
    output = agent.run("What is the weather?")
print("Agno's status:", output.status.value)  # Agno's status: COMPLETED

bails = telemetry.value("symfonic.react.silent_bails", {"tenant.id": "acme"})
run = telemetry.span("invoke_agent helper").attributes or {}
print("silent bails:", int(bails))  # silent bails: 1
print("stop reason:", run["symfonic.run.stop_reason"])  # stop reason: recursion_limit
print("outcome:", run["symfonic.run.outcome"])  # outcome: completed
