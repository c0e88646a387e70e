"""A Haystack Agent that calls tools until ``max_agent_steps``: what the tracer records.

Haystack's ``MockChatGenerator`` stands in for a real model (no network); in-memory telemetry
shows the result. Haystack raises nothing at the cap: the result's ``exit_reason`` says it.
"""

from haystack.components.agents import Agent
from haystack.components.generators.chat import MockChatGenerator
from haystack.dataclasses import ChatMessage, ToolCall
from haystack.tools import tool

from symfonic_otel import tenant_scope
from symfonic_otel.haystack import SymfonicTracer
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def always_calls_a_tool(messages: list[ChatMessage]) -> ChatMessage:
    return ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name="lookup", arguments={})])


@tool
def lookup() -> str:
    """Look something up."""
    return "nothing found"


telemetry = InMemoryTelemetry()
SymfonicTracer(handler=telemetry.handler()).install()
generator = MockChatGenerator(response_fn=always_calls_a_tool)
agent = Agent(chat_generator=generator, tools=[lookup], max_agent_steps=3)

with tenant_scope("acme"):
    result = agent.run([ChatMessage.from_user("What is the weather?")])
print("exit reason:", result["exit_reason"])  # exit reason: max_agent_steps

bails = telemetry.value("symfonic.react.silent_bails", {"tenant.id": "acme"})
run = telemetry.span("invoke_agent symfonic").attributes or {}
print("silent bails:", int(bails))  # silent bails: 1
print("stop reason:", run["symfonic.run.stop_reason"])  # stop reason: recursion_limit
print("outcome:", run["symfonic.run.outcome"])  # outcome: completed
