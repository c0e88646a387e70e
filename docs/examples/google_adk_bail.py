"""A Google ADK run that calls tools until ``max_llm_calls``: what the plugin records.

A scripted ``BaseLlm`` stands in for a real model (no network); in-memory telemetry shows
the result.
"""

import asyncio
from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.agents.invocation_context import LlmCallsLimitExceededError
from google.adk.agents.run_config import RunConfig
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

from symfonic_otel import tenant_scope
from symfonic_otel.google_adk import SymfonicPlugin
from symfonic_otel.testing.telemetry import InMemoryTelemetry


class AlwaysCallsATool(BaseLlm):
    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        call = types.FunctionCall(name="lookup", args={"q": "x"})
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(function_call=call)])
        )


def lookup(q: str) -> str:
    """Look something up."""
    return "nothing found"


telemetry = InMemoryTelemetry()
agent = LlmAgent(name="helper", model=AlwaysCallsATool(), tools=[lookup])
app = App(name="demo", root_agent=agent, plugins=[SymfonicPlugin(handler=telemetry.handler())])
runner = InMemoryRunner(app=app)


async def ask() -> None:
    session = await runner.session_service.create_session(app_name="demo", user_id="u1")
    message = types.Content(role="user", parts=[types.Part(text="What is the weather?")])
    config = RunConfig(max_llm_calls=3)
    async for _ in runner.run_async(
        user_id="u1", session_id=session.id, new_message=message, run_config=config
    ):
        pass


with tenant_scope("acme"):
    try:
        asyncio.run(ask())
    except LlmCallsLimitExceededError:
        print("LlmCallsLimitExceededError")  # LlmCallsLimitExceededError

bails = telemetry.value("symfonic.react.silent_bails", {"tenant.id": "acme"})
run = telemetry.span("invoke_agent helper").attributes or {}
print("silent bails:", int(bails))  # silent bails: 1
print("stop reason:", run["symfonic.run.stop_reason"])  # stop reason: recursion_limit
print("outcome:", run["symfonic.run.outcome"])  # outcome: error
