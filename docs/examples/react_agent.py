import asyncio

from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from symfonic_otel import OTelCallbackHandler
from symfonic_otel.agent import FrameworkConfig, ReactAgent
from symfonic_otel.testing import ScriptedChatModel


@tool
def lookup(key: str) -> str:
    """Look a key up in the catalogue."""
    return f"{key} is in stock"


def call(i: int) -> AIMessage:
    # The model keeps calling the same tool with the same arguments and never writes text.
    return AIMessage(
        content="",
        tool_calls=[{"name": "lookup", "args": {"key": "sku-42"}, "id": f"call_{i}"}],
        response_metadata={"finish_reason": "tool_calls"},
    )


model = ScriptedChatModel([call(0), call(1), call(2), "sku-42 is in stock."])
agent = ReactAgent(
    model,
    [lookup],
    config=FrameworkConfig(synthesize_on_empty_final=True),
    callbacks=[OTelCallbackHandler()],
)

response = asyncio.run(agent.run("Is sku-42 in stock?"))
print(response.final_response)  # sku-42 is in stock.   (from the synthesis call)
print(response.termination_reason)  # tool_calls_with_no_text
print(response.synthesized, response.iterations, len(model.calls))  # True 3 4
print(model.calls[-1].tools_bound)  # False: the recovery call cannot start new tool calls
