"""A Microsoft Agent Framework agent that calls tools until ``max_iterations``: what the
middleware records.

A scripted chat client (the framework's own function-calling and middleware layers over a raw
client) stands in for a real model (no network); in-memory telemetry shows the result. At the
cap the framework makes one more call with tools off and returns its reply: it raises nothing.
"""

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
    tool,
)

from symfonic_otel import tenant_scope
from symfonic_otel.agent_framework import SymfonicAgentFramework
from symfonic_otel.testing.telemetry import InMemoryTelemetry


class AlwaysCallsATool(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **_: Any
    ) -> Any:
        if options.get("tool_choice") == "none":  # the forced final call
            reply = Content.from_text("Probably sunny.")
        else:
            arguments = json.dumps({"q": "x"})
            reply = Content.from_function_call(call_id="c", name="lookup", arguments=arguments)

        async def respond() -> ChatResponse[Any]:
            return ChatResponse(messages=[Message(role="assistant", contents=[reply])])

        return respond()


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return "nothing found"


telemetry = InMemoryTelemetry()
adapter = SymfonicAgentFramework(handler=telemetry.handler())
client = AlwaysCallsATool(function_invocation_configuration={"max_iterations": 3})
agent = Agent(client=client, tools=[lookup], name="helper", middleware=adapter.middleware)

with tenant_scope("acme"):
    response = asyncio.run(agent.run("What is the weather?"))
print("the framework's answer:", response.text)  # the framework's answer: Probably sunny.

bails = telemetry.value("symfonic.react.silent_bails", {"tenant.id": "acme"})
recovered = {"symfonic.synthesis.recovered": True}
fallbacks = telemetry.value("symfonic.react.synthesis_fallbacks", recovered)
run = telemetry.span("invoke_agent helper").attributes or {}
print("silent bails:", int(bails))  # silent bails: 1
print("forced answers recovered:", int(fallbacks))  # forced answers recovered: 1
print("stop reason:", run["symfonic.run.stop_reason"])  # stop reason: recursion_limit
