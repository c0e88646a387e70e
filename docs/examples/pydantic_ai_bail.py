"""A Pydantic AI run that calls tools until its request limit: what the capability records.

A scripted ``FunctionModel`` stands in for a real model (no network); in-memory telemetry shows
the result.
"""

from pydantic_ai import Agent, UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from symfonic_otel import tenant_scope
from symfonic_otel.pydantic_ai import SymfonicCapability
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def always_calls_a_tool(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("lookup", {"q": "x"})])


telemetry = InMemoryTelemetry()
agent = Agent(
    FunctionModel(always_calls_a_tool),
    name="helper",
    capabilities=[SymfonicCapability(handler=telemetry.handler())],
)


@agent.tool_plain
def lookup(q: str) -> str:
    """Look something up."""
    return "nothing found"


with tenant_scope("acme"):
    try:
        agent.run_sync("What is the weather?", usage_limits=UsageLimits(request_limit=3))
    except UsageLimitExceeded:
        print("UsageLimitExceeded")  # UsageLimitExceeded

bails = telemetry.value("symfonic.react.silent_bails", {"tenant.id": "acme"})
run = telemetry.span("invoke_agent helper").attributes or {}
print("silent bails:", int(bails))  # silent bails: 1
print("stop reason:", run["symfonic.run.stop_reason"])  # stop reason: recursion_limit
print("outcome:", run["symfonic.run.outcome"])  # outcome: error
