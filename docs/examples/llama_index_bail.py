"""A LlamaIndex agent that calls tools until ``max_iterations``: what the adapter records.

LlamaIndex's own ``MockFunctionCallingLLM`` plays a scripted model (no network); in-memory
telemetry shows the result. With ``early_stopping_method="generate"`` the agent makes one more
model call for a final answer and returns it normally: a silent bail and a synthesis fallback.
"""

import asyncio

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM

from symfonic_otel import tenant_scope
from symfonic_otel.llama_index import SymfonicLlamaIndex
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def lookup(q: str) -> str:
    """Look something up."""
    return "nothing found"


def scripted(messages: list[ChatMessage], **kwargs: object) -> ChatMessage:
    if kwargs.get("tools"):  # offered tools: keep calling one
        call = ToolCallBlock(tool_call_id="c1", tool_name="lookup", tool_kwargs={"q": "x"})
        return ChatMessage(role="assistant", blocks=[call])
    return ChatMessage(role="assistant", content="I could not find it.")  # the forced answer


telemetry = InMemoryTelemetry()
SymfonicLlamaIndex(telemetry.handler()).instrument()
agent = FunctionAgent(
    name="helper", llm=MockFunctionCallingLLM(response_generator=scripted), tools=[lookup]
)


async def main() -> None:
    with tenant_scope("acme"):
        result = await agent.run(
            user_msg="What is the weather?", max_iterations=3, early_stopping_method="generate"
        )
    print("answer:", result)  # answer: I could not find it.


asyncio.run(main())
bails = telemetry.value("symfonic.react.silent_bails", {"tenant.id": "acme"})
fallbacks = telemetry.value("symfonic.react.synthesis_fallbacks", {"tenant.id": "acme"})
run = telemetry.span("invoke_agent helper").attributes or {}
print("silent bails:", int(bails))  # silent bails: 1
print("synthesis fallbacks:", int(fallbacks))  # synthesis fallbacks: 1
print("stop reason:", run["symfonic.run.stop_reason"])  # stop reason: recursion_limit
print("outcome:", run["symfonic.run.outcome"])  # outcome: completed
