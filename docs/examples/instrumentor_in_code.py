from langchain.agents import create_agent

from symfonic_otel import configure_telemetry
from symfonic_otel.instrumentation import SymfonicLangChainInstrumentor
from symfonic_otel.testing import ScriptedChatModel

telemetry = configure_telemetry(service_name="support-agent", otlp=False, console=True)
# Every LangChain / LangGraph run in the process is recorded from here on, no callbacks needed.
SymfonicLangChainInstrumentor().instrument(agent_name="support", node_spans=True)

agent = create_agent(ScriptedChatModel(["Hello!"]), [])
print(agent.invoke({"messages": [("user", "Hi")]})["messages"][-1].content)  # Hello!

SymfonicLangChainInstrumentor().uninstrument()
telemetry.shutdown()
