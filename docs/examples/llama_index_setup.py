from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.llms.mock import MockFunctionCallingLLM

from symfonic_otel import configure_telemetry
from symfonic_otel.llama_index import SymfonicLlamaIndex

configure_telemetry()  # OTLP to OTEL_EXPORTER_OTLP_ENDPOINT, as every OTel SDK setup
SymfonicLlamaIndex().instrument()  # once per process: every agent run is recorded from here on
agent = FunctionAgent(name="helper", llm=MockFunctionCallingLLM(), tools=[])  # your LLM here
