"""A scripted Agno ``Model`` (no network) and an instrumented agent for the Agno adapter tests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

from agno.agent import Agent
from agno.metrics import MessageMetrics
from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse

from symfonic_otel.agno import SymfonicAgno

FOREVER = 10**6
QUESTION = "What is the weather?"


@dataclass
class ScriptedModel(Model):
    """Calls ``lookup`` until ``tool_turns`` tool results are in, then answers ``answer``;
    ``fail`` raises ``ConnectionError`` instead (a model provider that is down)."""

    id: str = "scripted"
    name: str = "Scripted"
    provider: str = "scripted"
    tool_turns: int = FOREVER
    answer: str = "It is sunny."
    fail: bool = False

    def _turn(self, messages: list[Message]) -> ModelResponse:
        if self.fail:
            raise ConnectionError("model down")
        done = sum(1 for m in messages if m.role == "tool")
        usage = MessageMetrics(input_tokens=10, output_tokens=5, total_tokens=15)
        if done < self.tool_turns:
            call = {
                "id": f"call-{done}",
                "type": "function",
                "function": {"name": "lookup", "arguments": json.dumps({"q": "weather"})},
            }
            return ModelResponse(role="assistant", tool_calls=[call], response_usage=usage)
        return ModelResponse(role="assistant", content=self.answer, response_usage=usage)

    def invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._turn(kwargs["messages"])

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._turn(kwargs["messages"])

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        yield self._turn(kwargs["messages"])

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        yield self._turn(kwargs["messages"])

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]


def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}"


def agent(adapter: SymfonicAgno, model: ScriptedModel, **kwargs: Any) -> Agent:
    tools = kwargs.pop("tools", [lookup])
    built = Agent(model=model, tools=tools, name="helper", telemetry=False, **kwargs)
    return adapter.instrument(built)
