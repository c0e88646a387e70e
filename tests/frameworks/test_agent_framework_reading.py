"""What the Agent Framework adapter reads of a response and when it stamps a model call.

A ``ChatResponse`` carries every message of the exchange (the tool results too): only the
assistant's messages are the model's turn. A model call is stamped in epoch nanoseconds.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agent_framework import ChatResponse, Content, Message

from symfonic_otel.agent_framework import SymfonicAgentFramework
from symfonic_otel.agent_framework.read import response_text, turn_of
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_framework_support import QUESTION, ScriptedClient, agent


def _response() -> ChatResponse:
    return ChatResponse(
        messages=[
            Message(role="tool", contents=[Content.from_text("tool output text")]),
            Message(role="assistant", contents=[Content.from_text("It is sunny.")]),
        ],
        finish_reason="stop",
    )


def test_only_the_assistants_messages_are_the_models_turn() -> None:
    response = _response()
    assert response_text(response) == "It is sunny."
    turn = turn_of(response)
    assert turn.text == "It is sunny." and turn.tool_calls == 0


_MODEL_S = 0.02  # how long each of the slow client's calls takes, at least


class _SlowClient(ScriptedClient):
    def _inner_get_response(self, **kwargs: Any) -> Any:
        answer = super()._inner_get_response(**kwargs)

        async def slowly() -> Any:
            await asyncio.sleep(_MODEL_S)
            return await answer

        return slowly()


def test_model_calls_are_timed_from_their_start_in_epoch_nanoseconds(
    telemetry: InMemoryTelemetry,
) -> None:
    adapter = SymfonicAgentFramework(handler=telemetry.handler())
    before = time.time_ns()
    result = asyncio.run(agent(adapter, _SlowClient(tool_turns=1)).run(QUESTION))
    after = time.time_ns()
    assert result.text == "It is sunny."
    chats = [s for s in telemetry.spans() if s.name.startswith("chat")]
    assert len(chats) == 2
    for chat in chats:
        assert chat.start_time is not None and chat.end_time is not None
        assert before <= chat.start_time <= chat.end_time <= after
        assert chat.end_time - chat.start_time >= _MODEL_S * 1e9
