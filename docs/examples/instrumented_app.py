# An application with no telemetry code: run it under `opentelemetry-instrument`.
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from symfonic_otel.testing import ScriptedChatModel


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"Sunny in {city}"


call = {"name": "weather", "args": {"city": "Paris"}, "id": "c1"}
model = ScriptedChatModel([AIMessage(content="", tool_calls=[call]), "It is sunny in Paris."])
agent = create_agent(model, [weather])

result = agent.invoke(
    {"messages": [("user", "What is the weather in Paris?")]},
    config={"metadata": {"tenant_id": "acme"}},
)
print(result["messages"][-1].content)  # It is sunny in Paris.
