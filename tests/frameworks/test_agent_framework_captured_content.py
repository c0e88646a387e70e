"""What an Agent Framework run records when content capture is on, and the token counts of
each model call: the question is the last message the run was given, the tool's span carries
its result, a model call its finish reason and its input and output tokens each in its own
attribute."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agent_framework", reason="needs the agent-framework extra")

from agent_framework import Content, Message

from symfonic_otel import semconv
from symfonic_otel.agent_framework import SymfonicAgentFramework
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_framework_support import QUESTION, ScriptedClient, agent


def _user(text: str) -> Message:
    return Message(role="user", contents=[Content.from_text(text)])


def _streamed_run(telemetry: InMemoryTelemetry) -> None:
    adapter = SymfonicAgentFramework(handler=telemetry.handler(capture_content=True))
    built = agent(adapter, ScriptedClient(tool_turns=1))

    async def go() -> Any:
        stream = built.run([_user("An earlier question"), _user(QUESTION)], stream=True)
        async for _ in stream:
            pass
        return await stream.get_final_response()

    assert asyncio.run(go()).text == "It is sunny."


def test_the_captured_question_is_the_last_message_the_run_was_given(
    telemetry: InMemoryTelemetry,
) -> None:
    _streamed_run(telemetry)
    asked = str(
        (telemetry.span("invoke_agent helper").attributes or {}).get(semconv.GEN_AI_INPUT_MESSAGES)
    )
    assert QUESTION in asked and "An earlier question" not in asked


def test_a_captured_tool_span_carries_the_tools_result(telemetry: InMemoryTelemetry) -> None:
    _streamed_run(telemetry)
    tool = telemetry.span("execute_tool lookup").attributes or {}
    assert "result for weather" in str(tool.get(semconv.GEN_AI_TOOL_CALL_RESULT))


def test_each_model_call_has_its_finish_reason_and_its_input_and_output_tokens(
    telemetry: InMemoryTelemetry,
) -> None:
    _streamed_run(telemetry)
    chats = [s.attributes or {} for s in telemetry.spans() if s.name == "chat scripted"]
    assert len(chats) == 2
    for chat in chats:
        assert chat[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 10
        assert chat[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 5
        assert tuple(chat[semconv.GEN_AI_RESPONSE_FINISH_REASONS]) == ("stop",)  # type: ignore[arg-type]
