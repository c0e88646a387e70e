"""How each run ends: its exit on AgentEnd, stop notes, and the history the next turn sees."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from symfonic_otel.agent import (
    SAFE_ENVELOPE,
    FabricationFinding,
    FrameworkConfig,
    ReactAgent,
    StreamFinal,
    finishes_on_text_with_tool_calls,
)
from symfonic_otel.agent.exits import REFUSED_NOTE, TRUNCATED_NOTE
from symfonic_otel.agent.loop import SYNTHESIS_FAILED
from symfonic_otel.semconv import NODE_REACT, NODE_SYNTHESIZE_FALLBACK
from symfonic_otel.testing.scripted import ScriptedChatModel
from tests.support.agent_support import (
    TOOLS,
    Recorder,
    assert_calls_saw_valid_history,
    call,
    turn,
    unanswered_calls,
)


class RateLimitError(Exception):
    """Named like the provider SDKs' error, to see the type name travel."""


def make(script: list[Any], **config: Any) -> tuple[ScriptedChatModel, ReactAgent, Recorder]:
    model = ScriptedChatModel(script)
    recorder = Recorder()
    agent = ReactAgent(model, TOOLS, config=FrameworkConfig(**config), callbacks=[recorder])
    return model, agent, recorder


def loop_of_three(text: str = "") -> list[AIMessage]:
    return [
        turn(text, call("lookup", {"key": "x"}, f"c{i}"), finish="tool_calls") for i in range(3)
    ]


def last_ai(messages: list[BaseMessage]) -> AIMessage:
    found = [m for m in messages if isinstance(m, AIMessage)]
    return found[-1]


# --- the run's exit on AgentEnd ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "config", "exit_reason"),
    [
        ([turn("Done.", finish="stop")], {}, "end_turn"),
        ([turn("Cut", finish="length")], {}, "max_tokens"),
        ([turn("No.", stop="refusal")], {}, "refusal"),
        ([turn(" A joke.", finish="eos")], {}, "eos"),
        (loop_of_three(), {}, "loop_detected"),
        (
            [
                turn("", call("lookup", {"key": str(i)}, f"c{i}"), finish="tool_calls")
                for i in range(3)
            ],
            {"recursion_limit": 2},
            "recursion_limit",
        ),
    ],
    ids=["end_turn", "max_tokens", "refusal", "eos", "loop_detected", "recursion_limit"],
)
async def test_agent_end_carries_the_run_exit(
    script: list[Any], config: dict[str, Any], exit_reason: str
) -> None:
    _model, agent, recorder = make(script, **config)
    response = await agent.run("q")
    [end] = recorder.of("agent_end")
    assert (end.outcome, end.stop_reason, end.error_type) == ("completed", exit_reason, None)
    assert response.run_stop_reason == exit_reason
    assert response.stop_note is None  # notes are off by default


async def test_provider_error_exit_carries_the_exception_type() -> None:
    _model, agent, recorder = make(
        [turn("", call("add", {"a": 1, "b": 2}), finish="tool_calls"), RateLimitError("429")]
    )
    with pytest.raises(RateLimitError):
        await agent.run("q")
    first, failed = recorder.of("llm_end")
    assert (first.outcome, first.error_type, first.stop_reason) == ("completed", None, "tool_calls")
    assert (failed.outcome, failed.error_type, failed.stop_reason) == (
        "error",
        "RateLimitError",
        None,
    )
    [end] = recorder.of("agent_end")
    assert (end.outcome, end.stop_reason, end.error_type) == ("error", "error", "RateLimitError")


async def test_interrupted_exit_on_stream_and_on_task_cancellation() -> None:
    _model, agent, recorder = make(
        [turn("", call("add", {"a": 1, "b": 2}), finish="tool_calls"), KeyboardInterrupt()]
    )
    with pytest.raises(KeyboardInterrupt):
        async for _ in agent.stream("q"):
            pass
    model = ScriptedChatModel([turn("late", finish="stop")], latency_s=3600)
    cancelled = Recorder()
    task = asyncio.create_task(ReactAgent(model, TOOLS, callbacks=[cancelled]).run("q"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for rec in (recorder, cancelled):
        [end] = rec.of("agent_end")
        assert (end.outcome, end.stop_reason, end.error_type) == ("cancelled", "interrupted", None)


# --- synthesis failure and what the history ends with -----------------------------------------


async def test_failing_synthesis_leaves_a_completed_silent_bail() -> None:
    model, agent, recorder = make(
        [*loop_of_three(), RateLimitError("429 on the recovery call")],
        synthesize_on_empty_final=True,
    )
    response = await agent.run("what is x?", run_id="s")

    assert (response.final_response, response.synthesized) == ("", False)
    assert response.termination_reason == "tool_calls_with_no_text"
    assert len(model.calls) == 4
    synthesis = recorder.of("llm_end")[-1]
    assert (synthesis.node_name, synthesis.outcome, synthesis.error_type) == (
        NODE_SYNTHESIZE_FALLBACK,
        "error",
        "RateLimitError",
    )
    [end] = recorder.of("agent_end")
    assert (end.outcome, end.final_response, end.stop_reason) == ("completed", "", "loop_detected")
    assert len(recorder.of("react_loop_end")) == 1
    assert agent.failures.counts() == {SYNTHESIS_FAILED: 1}
    assert unanswered_calls(response.messages) == []


async def test_synthesized_answer_is_the_last_ai_message_of_the_history() -> None:
    history: list[BaseMessage] = []
    _model, agent, _ = make([*loop_of_three(), "x is value-of-x."], synthesize_on_empty_final=True)
    response = await agent.run("what is x?", history=history)

    assert response.final_response == "x is value-of-x."
    assert history[-1] is response.messages[-1]
    last = history[-1]
    assert isinstance(last, AIMessage) and last.content == "x is value-of-x."
    assert last.tool_calls == []
    assert unanswered_calls(history) == []


async def test_refuse_envelope_is_the_last_ai_message_of_the_history() -> None:
    def detector(draft: str, messages: list[BaseMessage]) -> list[FabricationFinding]:
        return [FabricationFinding("action", "I sent it", 0.95)]

    draft = turn("I sent the email.", finish="stop")
    _model, agent, _ = make([draft], fabrication_check="refuse", fabrication_detector=detector)
    response = await agent.run("send it")

    assert response.final_response == SAFE_ENVELOPE
    assert [m.content for m in response.messages if isinstance(m, AIMessage)] == [
        "I sent the email.",
        SAFE_ENVELOPE,
    ]


async def test_plain_answer_adds_nothing_to_the_history() -> None:
    _model, agent, _ = make([turn("Paris.", finish="stop")])
    response = await agent.run("capital?")
    assert [type(m) for m in response.messages] == [HumanMessage, AIMessage]


# --- tool calls without an id -----------------------------------------------------------------


@pytest.mark.parametrize("path", ["run", "stream"])
async def test_tool_call_without_id_gets_one_and_its_result_pairs(path: str) -> None:
    model, agent, _ = make(
        [
            turn("", call("add", {"a": 2, "b": 3}, call_id=""), finish="tool_calls"),
            turn("It is 5.", finish="stop"),
        ]
    )
    if path == "run":
        response = await agent.run("2+3")
    else:
        events = [e async for e in agent.stream("2+3")]
        assert isinstance(events[-1], StreamFinal)
        response = events[-1].response

    assert response.final_response == "It is 5."
    ai, result = response.messages[1], response.messages[2]
    assert isinstance(ai, AIMessage) and isinstance(result, ToolMessage)
    call_id = ai.tool_calls[0]["id"]
    assert call_id and result.tool_call_id == call_id
    assert result.content == "5"  # the real result, not a placeholder
    assert model.calls[1].messages[-1].content == "5"
    assert_calls_saw_valid_history(model.calls)


# --- length recovery caps consecutive recoveries ----------------------------------------------


async def test_length_recovery_cap_is_per_consecutive_streak() -> None:
    model, agent, _ = make(
        [
            turn("Part A ", finish="length"),
            turn("", call("lookup", {"key": "k"}), finish="tool_calls"),
            turn("Part B ", finish="length"),
            turn("end.", finish="stop"),
        ],
        max_length_recoveries=1,
    )
    response = await agent.run("long")
    # The tool round ended the first streak, so the second cut is continued too.
    assert response.final_response == "Part B end."
    assert (response.stop_reason, response.iterations, len(model.calls)) == ("end_turn", 4, 4)


async def test_consecutive_recoveries_stop_at_the_cap() -> None:
    model, agent, _ = make(
        [
            turn("a ", finish="length"),
            turn("b ", finish="length"),
            turn("c ", finish="length"),
            turn("never", finish="stop"),
        ],
        max_length_recoveries=2,
    )
    response = await agent.run("long")
    assert (response.final_response, response.stop_reason, len(model.calls)) == (
        "a b c ",
        "max_tokens",
        3,
    )


# --- iterations and usage -------------------------------------------------------------------


async def test_iterations_count_loop_calls_only() -> None:
    def detector(draft: str, messages: list[BaseMessage]) -> list[FabricationFinding]:
        return [FabricationFinding("figure", "42", 0.6)]

    model, agent, recorder = make(
        [*loop_of_three(), "x is 42.", "x is value-of-x."],
        synthesize_on_empty_final=True,
        fabrication_check="revise",
        fabrication_detector=detector,
    )
    response = await agent.run("x?")
    assert response.final_response == "x is value-of-x."
    assert response.iterations == 3
    assert [e.node_name for e in recorder.of("llm_end")].count(NODE_REACT) == 3
    assert len(model.calls) == 5


async def test_cache_token_details_reach_llm_end_usage() -> None:
    message = turn("Hi.", finish="stop")
    message.usage_metadata = {
        "input_tokens": 100,
        "output_tokens": 5,
        "total_tokens": 105,
        "input_token_details": {"cache_read": 80, "cache_creation": 10},
        "output_token_details": {"reasoning": 2},
    }
    _model, agent, recorder = make([message])
    await agent.run("q")
    [event] = recorder.of("llm_end")
    assert event.usage["input_token_details"] == {"cache_read": 80, "cache_creation": 10}
    usage = event.typed_usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_creation_tokens) == (
        100,
        80,
        10,
    )


# --- stop notes (seed 004), opt-in ----------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "config", "note"),
    [
        ([turn("Part one", finish="length")], {}, TRUNCATED_NOTE),
        ([turn("I can't help with that.", stop="refusal")], {}, REFUSED_NOTE),
        ([turn(" A joke.", finish="eos")], {}, "[stopped: eos]"),
        (
            [
                turn("Checking.", call("lookup", {"key": str(i)}, f"c{i}"), finish="tool_calls")
                for i in range(3)
            ],
            {"recursion_limit": 2},
            "[no final answer within the limit of 2 model calls]",
        ),
        (loop_of_three("Checking x."), {}, "[stopped: loop_detected]"),
    ],
    ids=["max_tokens", "refusal", "other", "recursion_limit", "loop_detected"],
)
async def test_stop_notes_mark_the_answer_and_the_history(
    script: list[Any], config: dict[str, Any], note: str
) -> None:
    _model, agent, recorder = make(script, stop_reason_notes=True, **config)
    response = await agent.run("q")

    answer = recorder.of("agent_end")[0].final_response
    assert answer.strip()
    assert response.final_response == f"{answer}\n\n{note}"
    assert response.stop_note == note
    assert last_ai(response.messages).content == note
    assert unanswered_calls(response.messages) == []


async def test_clean_end_turn_has_no_note() -> None:
    _model, agent, _ = make([turn("Paris.", finish="stop")], stop_reason_notes=True)
    response = await agent.run("capital?")
    assert (response.final_response, response.stop_note) == ("Paris.", None)
    assert len(response.messages) == 2


async def test_note_on_an_empty_answer_keeps_the_silent_bail_visible() -> None:
    _model, agent, recorder = make(
        [turn("", call("lookup", {"key": str(i)}, f"c{i}"), finish="tool_calls") for i in range(3)],
        stop_reason_notes=True,
        recursion_limit=3,
    )
    response = await agent.run("q")
    note = "[no final answer within the limit of 3 model calls]"
    assert response.final_response == note
    assert response.termination_reason == "tool_calls_with_no_text"
    assert len(recorder.of("react_loop_end")) == 1
    [end] = recorder.of("agent_end")
    assert (end.final_response, end.stop_reason) == ("", "recursion_limit")
    assert last_ai(response.messages).content == note


# --- multi-turn conversations: only the current run counts (issue: false bails) ---------------


async def test_two_turn_conversation_repeating_a_tool_call_is_not_a_loop() -> None:
    # Threshold 2: before, the first turn's call plus the second turn's first call was a "loop".
    model = ScriptedChatModel(
        [
            turn("", call("lookup", {"key": "x"}, "t1"), finish="tool_calls"),
            turn("x is value-of-x.", finish="stop"),
            turn("", call("lookup", {"key": "x"}, "t2"), finish="tool_calls"),
            turn("Still value-of-x.", finish="stop"),
        ]
    )
    recorder = Recorder()
    agent = ReactAgent(
        model, TOOLS, config=FrameworkConfig(loop_detection_threshold=2), callbacks=[recorder]
    )
    history: list[BaseMessage] = []
    first = await agent.run("what is x?", history=history)
    second = await agent.run("what is x again?", history=history)

    assert first.final_response == "x is value-of-x."
    assert second.final_response == "Still value-of-x."
    assert second.ended_by == "no_tool_calls"
    assert second.termination_reason is None
    assert recorder.of("react_loop_end") == []
    assert [m.content for m in history if isinstance(m, ToolMessage)] == ["value-of-x"] * 2
    assert len(model.calls) == 4


async def test_default_threshold_ignores_earlier_turns_calls() -> None:
    # Two lookups in turn one (a retry), one in turn two: three in the window, but not this run's.
    model = ScriptedChatModel(
        [
            turn("", call("lookup", {"key": "x"}, "a"), finish="tool_calls"),
            turn("", call("lookup", {"key": "x"}, "b"), finish="tool_calls"),
            turn("x is value-of-x.", finish="stop"),
            turn("", call("lookup", {"key": "x"}, "c"), finish="tool_calls"),
            turn("Still value-of-x.", finish="stop"),
        ]
    )
    agent = ReactAgent(model, TOOLS)
    history: list[BaseMessage] = []
    await agent.run("what is x?", history=history)
    second = await agent.run("again?", history=history)
    assert second.final_response == "Still value-of-x."
    assert len(model.calls) == 5


async def test_loop_in_the_current_run_is_still_cut_after_history() -> None:
    history: list[BaseMessage] = [
        HumanMessage(content="earlier"),
        AIMessage(content="", tool_calls=[call("lookup", {"key": "x"}, "old")]),
        ToolMessage(content="value-of-x", tool_call_id="old"),
        AIMessage(content="x is value-of-x."),
    ]
    model = ScriptedChatModel(loop_of_three())
    response = await ReactAgent(model, TOOLS).run("x?", history=history)
    assert response.ended_by == "loop_detected"
    assert len(model.calls) == 3  # the third identical call of this run, as without history


async def test_call_cap_counts_the_current_run_only() -> None:
    model = ScriptedChatModel(
        [turn("", call("lookup", {"key": "a"}, "a"), finish="tool_calls"), turn("A.")] * 2
    )
    agent = ReactAgent(model, TOOLS, config=FrameworkConfig(recursion_limit=2))
    history: list[BaseMessage] = []
    await agent.run("a?", history=history)
    second = await agent.run("a again?", history=history)
    assert (second.final_response, second.iterations) == ("A.", 2)


# --- which providers end a turn with text and tool calls --------------------------------------


@pytest.mark.parametrize(
    ("metadata", "hints", "setting", "expected"),
    [
        ({"model_provider": "openai", "model_name": "qwen3-max"}, (), "auto", True),
        ({"model_provider": "tongyi"}, (), "auto", True),
        (
            {"finish_reason": "stop"},
            ("https://dashscope.aliyuncs.com/compatible-mode/v1",),
            "auto",
            True,
        ),
        ({"model_provider": "ollama", "model_name": "qwen3:8b"}, ("qwen3:8b",), "auto", False),
        ({"done_reason": "stop", "model": "qwen2.5:7b"}, ("ChatOllama",), "auto", False),
        ({"model_provider": "google_genai", "model_name": "gemini-2.5-flash"}, (), "auto", False),
        ({"model_provider": "openai", "model_name": "gemini-2.5-flash"}, (), "auto", False),
        ({"model_provider": "openai", "model_name": "gpt-4o"}, (), "auto", False),
        ({}, (), "auto", False),
        ({"model_provider": "google_genai"}, (), "always", True),
        ({"model_provider": "openai", "model_name": "qwen3-max"}, (), "never", False),
    ],
)
def test_finish_on_text_with_tool_calls_recognises_documented_providers(
    metadata: dict[str, Any], hints: tuple[str, ...], setting: str, expected: bool
) -> None:
    message = AIMessage(content="x", response_metadata=metadata)
    assert finishes_on_text_with_tool_calls(message, setting, model_hints=hints) is expected


def test_new_config_fields_default_and_validate() -> None:
    config = FrameworkConfig()
    assert (config.finish_on_text_with_tool_calls, config.stop_reason_notes) == ("auto", False)
    with pytest.raises(ValueError, match="finish_on_text_with_tool_calls"):
        FrameworkConfig(finish_on_text_with_tool_calls="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="stop_reason_notes"):
        FrameworkConfig(stop_reason_notes=1)  # type: ignore[arg-type]
