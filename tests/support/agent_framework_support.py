"""A scripted Agent Framework chat client (no network) and agents for the adapter's tests.

The client composes the framework's own layers the way its provider clients do (function
invocation around chat middleware around the raw client), so the function-calling loop, its
``max_iterations`` cap and the forced final call with ``tool_choice="none"`` are the real ones.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
    tool,
)

from symfonic_otel.agent_framework import SymfonicAgentFramework

FOREVER = 10**6
QUESTION = "What is the weather?"
USAGE = {"input_token_count": 10, "output_token_count": 5, "total_token_count": 15}


class ScriptedClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """Calls ``lookup`` until ``tool_turns`` results are in, then answers ``answer``; asked with
    tools off (the forced final call) it answers ``final``; ``fail`` raises instead."""

    OTEL_PROVIDER_NAME = "scripted"

    def __init__(
        self,
        tool_turns: int = FOREVER,
        answer: str = "It is sunny.",
        final: str = "Probably sunny.",
        fail: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.tool_turns, self.answer, self.final, self.fail = tool_turns, answer, final, fail
        self.tool_choices: list[Any] = []

    def _reply(self, messages: Sequence[Message], options: Mapping[str, Any]) -> Message:
        self.tool_choices.append(options.get("tool_choice"))
        if self.fail:
            raise ConnectionError("model down")
        if options.get("tool_choice") == "none":
            return Message(role="assistant", contents=[Content.from_text(self.final)])
        done = sum(1 for m in messages for c in m.contents if c.type == "function_result")
        if done < self.tool_turns:
            call = Content.from_function_call(
                call_id=f"call-{done}", name="lookup", arguments=json.dumps({"q": "weather"})
            )
            return Message(role="assistant", contents=[call])
        return Message(role="assistant", contents=[Content.from_text(self.answer)])

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **_: Any
    ) -> Any:
        if not stream:

            async def once() -> ChatResponse[Any]:
                reply = self._reply(messages, options)
                return ChatResponse(messages=[reply], model="scripted", usage_details=USAGE)

            return once()

        async def updates() -> AsyncIterator[ChatResponseUpdate]:
            reply = self._reply(messages, options)
            yield ChatResponseUpdate(role="assistant", contents=reply.contents, model="scripted")
            usage = Content.from_usage(USAGE)  # type: ignore[arg-type]
            yield ChatResponseUpdate(role="assistant", contents=[usage], finish_reason="stop")

        return ResponseStream(updates(), finalizer=ChatResponse.from_updates)


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}"


def agent(
    adapter: SymfonicAgentFramework, client: ScriptedClient, tools: list[Any] | None = None
) -> Agent[Any]:
    return Agent(
        client=client, tools=tools or [lookup], name="helper", middleware=adapter.middleware
    )


def capped_client(max_iterations: int, **kwargs: Any) -> ScriptedClient:
    return ScriptedClient(
        function_invocation_configuration={"max_iterations": max_iterations}, **kwargs
    )
