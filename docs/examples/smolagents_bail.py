"""A smolagents agent that calls tools until ``max_steps``: what the adapter records.

A scripted ``Model`` subclass stands in for a real model (no network); in-memory telemetry shows
the result. smolagents then asks the model for a final answer and returns it normally: a silent
bail and a synthesis fallback.
"""

from typing import Any

from smolagents import Model, ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from smolagents.monitoring import TokenUsage

from symfonic_otel import tenant_scope
from symfonic_otel.smolagents import SymfonicSmolagents
from symfonic_otel.testing.telemetry import InMemoryTelemetry


@tool
def lookup(q: str) -> str:
    """Look something up.

    Args:
        q: What to look up.
    """
    return "nothing found"


class AlwaysCallsATool(Model):
    def generate(self, messages: Any, **kwargs: Any) -> ChatMessage:
        usage = TokenUsage(input_tokens=100, output_tokens=10)
        if not kwargs.get("tools_to_call_from"):  # the forced final-answer call
            return ChatMessage(MessageRole.ASSISTANT, "I could not find it.", token_usage=usage)
        call = ChatMessageToolCall(
            ChatMessageToolCallFunction({"q": "x"}, "lookup"), "c1", "function"
        )
        return ChatMessage(MessageRole.ASSISTANT, "", tool_calls=[call], token_usage=usage)


telemetry = InMemoryTelemetry()
agent = ToolCallingAgent(
    tools=[lookup],
    model=AlwaysCallsATool(model_id="scripted"),
    name="helper",
    max_steps=3,
    step_callbacks=SymfonicSmolagents(telemetry.handler()).step_callbacks(),
    verbosity_level=-1,
)

with tenant_scope("acme"):
    result = agent.run("What is the weather?", return_full_result=True)
print("answer:", result.output)  # answer: I could not find it.
print("state:", result.state)  # state: max_steps_error

bails = telemetry.value("symfonic.react.silent_bails", {"tenant.id": "acme"})
fallbacks = telemetry.value("symfonic.react.synthesis_fallbacks", {"tenant.id": "acme"})
run = telemetry.span("invoke_agent helper").attributes or {}
print("silent bails:", int(bails))  # silent bails: 1
print("synthesis fallbacks:", int(fallbacks))  # synthesis fallbacks: 1
print("stop reason:", run["symfonic.run.stop_reason"])  # stop reason: recursion_limit
print("outcome:", run["symfonic.run.outcome"])  # outcome: completed
