"""Stop-reason normalisation and flattening on the shapes LangChain's provider adapters produce.

The messages below mirror the recorded provider responses after ``langchain-openai`` and
``langchain-anthropic`` parsed them (content type, block types, ``response_metadata`` keys,
``additional_kwargs``), with short texts of our own.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from symfonic_otel.agent import (
    FrameworkConfig,
    ReactAgent,
    flatten_content_blocks,
    normalize_stop_reason,
)
from symfonic_otel.agent.loop import CONTINUE_PROMPT
from symfonic_otel.testing.scripted import ScriptedChatModel
from tests.support.agent_support import TOOLS, Recorder, turn

OPENAI_META: dict[str, Any] = {
    "id": "chatcmpl-1",
    "logprobs": None,
    "model_provider": "openai",
    "service_tier": "default",
    "system_fingerprint": "fp_1",
    "token_usage": {},
}
ANTHROPIC_META: dict[str, Any] = {
    "id": "msg_1",
    "model_provider": "anthropic",
    "stop_sequence": None,
    "usage": {},
    "container": None,
    "stop_details": None,
}


def openai(
    content: Any,
    finish: str,
    *,
    model: str = "gpt-4o-mini-2024-07-18",
    refusal: str | None = None,
    calls: list[dict[str, Any]] | None = None,
) -> AIMessage:
    return AIMessage(
        content=content,
        tool_calls=calls or [],
        additional_kwargs={"refusal": refusal},
        response_metadata={**OPENAI_META, "finish_reason": finish, "model_name": model},
    )


def anthropic(
    content: Any,
    stop: str,
    *,
    model: str = "claude-sonnet-4-20250514",
    calls: list[dict[str, Any]] | None = None,
) -> AIMessage:
    return AIMessage(
        content=content,
        tool_calls=calls or [],
        response_metadata={
            **ANTHROPIC_META,
            "stop_reason": stop,
            "model": model,
            "model_name": model,
        },
    )


TEXT = {"type": "text", "text": "A short answer."}
THINKING = {"type": "thinking", "thinking": "Let me think.", "signature": "EqQB"}
REASONING_V1 = {"type": "reasoning", "reasoning": "Let me think."}
TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"key": "a"}}
CALL = {"name": "lookup", "args": {"key": "a"}, "id": "toolu_1", "type": "tool_call"}

# (recording, message, normalised stop reason, flattened text)
SHAPES: list[tuple[str, AIMessage, str | None, str | None]] = [
    (
        "anthropic_end_turn v0",
        anthropic("A short answer.", "end_turn"),
        "end_turn",
        "A short answer.",
    ),
    ("anthropic_end_turn v1", anthropic([TEXT], "end_turn"), "end_turn", "A short answer."),
    (
        "anthropic_thinking_text v0",
        anthropic([THINKING, TEXT], "end_turn"),
        "end_turn",
        "A short answer.",
    ),
    (
        "anthropic_thinking_text v1",
        anthropic([REASONING_V1, TEXT], "end_turn"),
        "end_turn",
        "A short answer.",
    ),
    (
        "anthropic_text_thinking_text",
        anthropic([TEXT, THINKING, TEXT], "end_turn"),
        "end_turn",
        "A short answer.A short answer.",
    ),
    (
        "anthropic_redacted_thinking_text",
        anthropic([{"type": "redacted_thinking", "data": "xx"}, TEXT], "end_turn"),
        "end_turn",
        "A short answer.",
    ),
    (
        "anthropic_stop_sequence",
        anthropic("The city of ", "stop_sequence"),
        "stop_sequence",
        "The city of ",
    ),
    (
        "anthropic_max_tokens",
        anthropic("A long overview of ", "max_tokens"),
        "max_tokens",
        "A long overview of ",
    ),
    ("anthropic_thinking_only_max_tokens", anthropic([THINKING], "max_tokens"), "max_tokens", None),
    (
        "anthropic_refusal",
        anthropic("I won't help with that.", "refusal"),
        "refusal",
        "I won't help with that.",
    ),
    ("anthropic_tool_use_only", anthropic([TOOL_USE], "tool_use", calls=[CALL]), "tool_use", None),
    (
        "anthropic_thinking_text_tool_use",
        anthropic([THINKING, TEXT, TOOL_USE], "tool_use", calls=[CALL]),
        "tool_use",
        "A short answer.",
    ),
    (
        "anthropic_pause_turn",
        anthropic(
            [
                THINKING,
                TEXT,
                {"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}},
            ],
            "pause_turn",
        ),
        "pause_turn",
        "A short answer.",
    ),
    ("openai_stop", openai("The sum is 12.", "stop"), "end_turn", "The sum is 12."),
    ("openai_length", openai("This image shows", "length"), "max_tokens", "This image shows"),
    ("openai_tool_calls", openai("", "tool_calls", calls=[CALL]), "tool_use", None),
    (
        "openai_content_filter",
        openai("The sum is 12.", "content_filter"),
        "refusal",
        "The sum is 12.",
    ),
    (
        "openai_refusal_field",
        openai("", "stop", refusal="I can't assist with that."),
        "refusal",
        None,
    ),
    (
        "together_eos",
        openai(" A joke.", "eos", model="mistralai/Mixtral-8x7B-Instruct-v0.1"),
        "eos",
        " A joke.",
    ),
    (
        "deepseek_text_and_tool_calls",
        openai("Let me load it.", "tool_calls", calls=[CALL]),
        "tool_use",
        "Let me load it.",
    ),
    (
        "qwen_text_and_tool_calls_stop",
        openai("5 + 7 = 12.", "stop", calls=[CALL]),
        "end_turn",
        "5 + 7 = 12.",
    ),
    ("bare EOF", AIMessage(content="Done."), None, "Done."),
]


@pytest.mark.parametrize(("name", "message", "stop", "text"), SHAPES, ids=[s[0] for s in SHAPES])
def test_normalisation_and_flattening(
    name: str, message: AIMessage, stop: str | None, text: str | None
) -> None:
    assert normalize_stop_reason(message) == stop
    assert flatten_content_blocks(message.content) == text


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        # Another provider's value under OpenAI's key is not OpenAI's: matched exactly.
        ({"finish_reason": "STOP"}, "STOP"),
        ({"finish_reason": "MAX_TOKENS"}, "MAX_TOKENS"),
        ({"finish_reason": "Stop"}, "Stop"),
        ({"finish_reason": "function_call"}, "function_call"),
        ({"finish_reason": "eos"}, "eos"),
        # Gemini's own vocabulary, recognised by the adapter's provider tag.
        ({"finish_reason": "STOP", "model_provider": "google_genai"}, "end_turn"),
        ({"finish_reason": "RECITATION", "model_provider": "google_genai"}, "RECITATION"),
        ({"finish_reason": "stop", "model_provider": "google_genai"}, "stop"),
        # Anthropic-family keys keep the four values and pass the rest.
        ({"stop_reason": "stop_sequence"}, "stop_sequence"),
        ({"stopReason": "guardrail_intervened"}, "guardrail_intervened"),
        ({"stopReason": "max_tokens"}, "max_tokens"),
        ({"stop_reason": "model_context_window_exceeded"}, "model_context_window_exceeded"),
        # Ollama's done_reason.
        ({"done_reason": "stop"}, "end_turn"),
        ({"done_reason": "load"}, "load"),
        ({}, None),
    ],
)
def test_each_provider_vocabulary_is_matched_exactly(
    metadata: dict[str, Any], expected: str | None
) -> None:
    message = AIMessage(content="x", response_metadata=metadata)
    assert normalize_stop_reason(message) == expected


def test_flatten_edge_cases() -> None:
    assert flatten_content_blocks("plain") == "plain"
    assert flatten_content_blocks("") is None
    assert flatten_content_blocks(None) is None
    assert flatten_content_blocks([]) is None
    assert flatten_content_blocks(["a", {"type": "text", "text": "b"}, {"type": "image"}]) == "ab"
    assert flatten_content_blocks([{"type": "text", "text": ""}]) is None


@pytest.mark.parametrize(
    ("message", "final", "stop"),
    [
        (openai("The sum is 12.", "content_filter"), "The sum is 12.", "refusal"),
        (
            openai("", "stop", refusal="I can't assist with that."),
            "I can't assist with that.",
            "refusal",
        ),
        (anthropic("I won't help.", "refusal"), "I won't help.", "refusal"),
        (openai(" A joke.", "eos"), " A joke.", "eos"),
        (anthropic("The city of ", "stop_sequence"), "The city of ", "stop_sequence"),
    ],
)
async def test_loop_reports_normalised_stop_reason(
    message: AIMessage, final: str, stop: str
) -> None:
    model = ScriptedChatModel([message])
    response = await ReactAgent(model, TOOLS).run("q")
    assert (response.final_response, response.stop_reason) == (final, stop)
    assert response.termination_reason is None
    assert len(model.calls) == 1


async def test_real_model_name_reaches_llm_end() -> None:
    recorder = Recorder()
    model = ScriptedChatModel([anthropic([THINKING, TEXT], "end_turn", model="claude-opus-4-6")])
    await ReactAgent(model, TOOLS, callbacks=[recorder]).run("q")
    [event] = recorder.of("llm_end")
    assert (event.model, event.output) == ("claude-opus-4-6", "A short answer.")


# --- max_tokens recovery -----------------------------------------------------------------------


async def _cut_twice(last: str, recoveries: int) -> tuple[ScriptedChatModel, Any]:
    """Two answers cut at the token limit, then ``last``, with ``recoveries`` continuations."""
    script = [openai("Part one, ", "length"), openai("part two, ", "length"), openai(last, "stop")]
    model = ScriptedChatModel(script)
    agent = ReactAgent(model, TOOLS, config=FrameworkConfig(max_length_recoveries=recoveries))
    return model, await agent.run("write a lot")


async def test_max_tokens_answer_is_continued_and_concatenated() -> None:
    model, response = await _cut_twice("the end.", recoveries=2)

    assert response.final_response == "Part one, part two, the end."
    assert response.stop_reason == "end_turn"
    assert response.iterations == 3
    second = model.calls[1].messages
    assert isinstance(second[-2], AIMessage) and second[-2].content == "Part one, "
    assert isinstance(second[-1], HumanMessage) and second[-1].content == CONTINUE_PROMPT
    assert all(c.tools_bound for c in model.calls)


async def test_max_tokens_recoveries_are_capped() -> None:
    model, response = await _cut_twice("never", recoveries=1)
    assert response.final_response == "Part one, part two, "
    assert response.stop_reason == "max_tokens"
    assert len(model.calls) == 2


async def test_max_tokens_without_recovery_returns_the_cut_text() -> None:
    model = ScriptedChatModel([openai("Part one, ", "length"), openai("never", "stop")])
    response = await ReactAgent(model, TOOLS).run("write a lot")
    assert (response.final_response, response.stop_reason) == ("Part one, ", "max_tokens")
    assert len(model.calls) == 1


async def test_max_tokens_recovery_respects_recursion_limit() -> None:
    model = ScriptedChatModel([openai("a ", "length"), openai("b ", "length"), openai("c", "stop")])
    agent = ReactAgent(
        model, TOOLS, config=FrameworkConfig(max_length_recoveries=5, recursion_limit=2)
    )
    response = await agent.run("long")
    assert response.final_response == "a b "
    assert len(model.calls) == 2


async def test_pause_turn_is_resumed_with_the_paused_message_sent_back() -> None:
    paused = anthropic(
        [TEXT, {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}],
        "pause_turn",
    )
    model = ScriptedChatModel([paused, anthropic(" More.", "end_turn")])
    response = await ReactAgent(model, TOOLS).run("search")
    assert response.final_response == "A short answer. More."
    assert response.stop_reason == "end_turn"
    assert model.calls[1].messages[-1].content == paused.content


def test_turn_helper_sets_openai_metadata() -> None:
    assert normalize_stop_reason(turn("x", finish="length")) == "max_tokens"
