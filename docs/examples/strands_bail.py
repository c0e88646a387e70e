"""A Strands agent that calls tools until its turn limit: what the hook provider records.

A scripted ``Model`` stands in for a real model (no network); in-memory telemetry shows the
result. Strands raises nothing at the limit: the result's ``stop_reason`` says it.
"""

import json
from collections.abc import AsyncGenerator
from typing import Any

from strands import Agent, tool
from strands.models import Model

from symfonic_otel import tenant_scope
from symfonic_otel.strands import SymfonicHooks
from symfonic_otel.testing.telemetry import InMemoryTelemetry


class AlwaysCallsATool(Model):
    def __init__(self) -> None:
        self.config: dict[str, Any] = {"model_id": "scripted"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        yield {"messageStart": {"role": "assistant"}}
        use = {"toolUseId": f"call-{len(messages)}", "name": "lookup"}
        yield {"contentBlockStart": {"start": {"toolUse": use}}}
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps({"q": "x"})}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return "nothing found"


telemetry = InMemoryTelemetry()
hooks = SymfonicHooks(handler=telemetry.handler())
agent = Agent(
    model=AlwaysCallsATool(), tools=[lookup], name="helper", hooks=[hooks], callback_handler=None
)

with tenant_scope("acme"):
    result = agent("What is the weather?", limits={"turns": 3})
print("stop reason from Strands:", result.stop_reason)  # stop reason from Strands: limit_turns

bails = telemetry.value("symfonic.react.silent_bails", {"tenant.id": "acme"})
run = telemetry.span("invoke_agent helper").attributes or {}
print("silent bails:", int(bails))  # silent bails: 1
print("stop reason:", run["symfonic.run.stop_reason"])  # stop reason: recursion_limit
print("outcome:", run["symfonic.run.outcome"])  # outcome: completed
