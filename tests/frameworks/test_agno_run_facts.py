"""What the Agno adapter records of a run beyond its verdict: the session as the conversation,
and, with content capture on, the question and each tool's arguments and result (an async tool's
awaited result, not the pending call); and what it reads of messages with several text parts or
a long context.
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("agno", reason="needs the agno extra")

from agno.models.message import Message

from symfonic_otel import semconv
from symfonic_otel.agno import SymfonicAgno
from symfonic_otel.agno.read import answer_of, run_turns, turn_of
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agno_support import QUESTION, ScriptedModel, agent


async def lookup(q: str) -> str:
    """Look something up."""
    await asyncio.sleep(0)
    return f"result for {q}"


def test_the_runs_session_is_its_conversation(telemetry: InMemoryTelemetry) -> None:
    built = agent(SymfonicAgno(handler=telemetry.handler()), ScriptedModel(tool_turns=0))
    assert built.run(QUESTION, session_id="sess-42").content == "It is sunny."
    run = telemetry.span("invoke_agent helper").attributes or {}
    assert run[semconv.GEN_AI_CONVERSATION_ID] == "sess-42"


@pytest.mark.parametrize("entry", ["run", "arun"])
def test_captured_question_tool_arguments_and_the_tools_result(
    telemetry: InMemoryTelemetry, entry: str
) -> None:
    adapter = SymfonicAgno(handler=telemetry.handler(capture_content=True))
    if entry == "run":
        built = agent(adapter, ScriptedModel(tool_turns=1))
        assert built.run(QUESTION).content == "It is sunny."
    else:
        built = agent(adapter, ScriptedModel(tool_turns=1), tools=[lookup])
        assert asyncio.run(built.arun(QUESTION)).content == "It is sunny."
    run = telemetry.span("invoke_agent helper").attributes or {}
    assert QUESTION in str(run[semconv.GEN_AI_INPUT_MESSAGES])
    (tool,) = [s.attributes or {} for s in telemetry.spans() if s.name.startswith("execute_tool")]
    assert "weather" in str(tool[semconv.GEN_AI_TOOL_CALL_ARGUMENTS])
    assert tool[semconv.GEN_AI_TOOL_CALL_RESULT] == "result for weather"


def test_every_text_part_of_a_message_is_its_text() -> None:
    parts = [{"type": "text", "text": "It is "}, {"type": "text", "text": "sunny."}]
    assert turn_of(Message(role="assistant", content=parts)).text == "It is sunny."
    assert answer_of(parts) == "It is sunny."


def test_a_long_context_keeps_its_newest_messages_the_runs_last_turn() -> None:
    """Past the bound on messages read, the oldest are the ones left out."""
    older = [Message(role="assistant", content=f"old {i}") for i in range(4096)]
    newest = Message(role="assistant", content="It is sunny.")
    turns = run_turns([*older, newest])
    assert turns[-1] is newest and turns[0] is not older[0]
