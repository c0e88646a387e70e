from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from symfonic_otel import LangChainCallbackHandler, configure_telemetry
from symfonic_otel.testing import ScriptedChatModel

telemetry = configure_telemetry(service_name="support-agent", otlp=False, console=True)
handler = LangChainCallbackHandler(agent_name="support")  # build once, reuse for every run


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"Sunny in {city}"


# Any chat model with tool calling works; this one replays a script, so no API key is needed.
call = {"name": "weather", "args": {"city": "Paris"}, "id": "c1"}
model = ScriptedChatModel([AIMessage(content="", tool_calls=[call]), "It is sunny in Paris."])
agent = create_agent(model, [weather])

result = agent.invoke(
    {"messages": [("user", "What is the weather in Paris?")]},
    config={"callbacks": [handler], "metadata": {"tenant_id": "acme"}},
)
telemetry.shutdown()  # the console exporters print the spans and metrics (JSON) above ...
print(result["messages"][-1].content)  # ... and the answer last: It is sunny in Paris.
