"""Every termination path of the reference loop: final response, stop reason, events, calls, log."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from structlog.testing import capture_logs

from symfonic_otel.agent import (
    SILENT_BAIL_LOG_EVENT,
    FrameworkConfig,
    ReactAgent,
    StreamFinal,
    StreamTextDelta,
)
from symfonic_otel.agent.history import NOT_RUN
from symfonic_otel.events import ReactLoopEndEvent
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

TOOL_NAMES = ("add", "lookup", "explode")


def make(script: list[Any], **config: Any) -> tuple[ScriptedChatModel, ReactAgent, Recorder]:
    model = ScriptedChatModel(script)
    recorder = Recorder()
    agent = ReactAgent(model, TOOLS, config=FrameworkConfig(**config), callbacks=[recorder])
    return model, agent, recorder


def bail_logs(logs: list[MutableMapping[str, Any]]) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == SILENT_BAIL_LOG_EVENT]


def tool_results(messages: list[Any]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


# --- path 1: the model answered -------------------------------------------------------------


async def test_plain_text_answer_finishes_after_one_call() -> None:
    model, agent, recorder = make([turn("Paris is the capital.", finish="stop")])
    with capture_logs() as logs:
        response = await agent.run("capital of France?", run_id="r1")

    assert response.final_response == "Paris is the capital."
    assert response.stop_reason == "end_turn"
    assert response.termination_reason is None
    assert (response.salvaged, response.synthesized, response.iterations) == (False, False, 1)
    assert response.ended_by == "no_tool_calls"
    assert recorder.kinds() == ["agent_start", "llm_end", "agent_end"]
    assert len(model.calls) == 1
    assert model.calls[0].tools == TOOL_NAMES
    assert [type(m) for m in model.calls[0].messages] == [HumanMessage]
    assert model.calls[0].messages[0].content == "capital of France?"
    assert bail_logs(logs) == []
    end = recorder.of("agent_end")[0]
    assert (end.run_id, end.final_response) == ("r1", "Paris is the capital.")
    assert end.outcome == "completed"


async def test_block_list_answer_is_flattened_and_history_keeps_blocks() -> None:
    blocks = [
        {"type": "thinking", "thinking": "The user wants a city.", "signature": "sig-1"},
        {"type": "text", "text": "It is "},
        {"type": "text", "text": "Paris."},
    ]
    _model, agent, _ = make([turn(blocks, stop="end_turn")])
    response = await agent.run("capital?")

    assert response.final_response == "It is Paris."
    assert response.stop_reason == "end_turn"
    last = response.messages[-1]
    assert isinstance(last, AIMessage)
    assert last.content == blocks  # signature and thinking kept for the provider


# --- path 2: forced finish on a tool-call turn ----------------------------------------------


async def test_end_turn_with_text_and_tool_calls_salvages_text_and_runs_no_tool() -> None:
    # The qwen shape: finish_reason "stop", text AND a tool call in one message.
    text = "5 + 7 = 12. I can double-check with the add tool."
    model, agent, recorder = make(
        [turn(text, call("add", {"a": 5, "b": 7}), finish="stop", model="qwen3-max")]
    )
    with capture_logs() as logs:
        response = await agent.run("5+7?")

    assert response.final_response == text
    assert response.stop_reason == "end_turn"
    assert response.salvaged is True
    assert response.termination_reason is None
    assert response.ended_by == "end_turn_with_text"
    assert len(model.calls) == 1
    assert recorder.of("react_loop_end") == []
    assert bail_logs(logs) == []
    # The unexecuted call is answered so the history can be sent back as is.
    results = tool_results(response.messages)
    assert [(r.tool_call_id, r.content, r.status) for r in results] == [("c1", NOT_RUN, "error")]
    assert unanswered_calls(response.messages) == []


async def test_text_with_tool_calls_and_tool_calls_finish_reason_runs_the_tool() -> None:
    # The DeepSeek shape: text plus a call, finish_reason "tool_calls": the tool must run.
    model, agent, _ = make(
        [
            turn("Let me add them.", call("add", {"a": 5, "b": 7}), finish="tool_calls"),
            turn("The sum is 12.", finish="stop"),
        ]
    )
    response = await agent.run("5+7?")

    assert response.final_response == "The sum is 12."
    assert response.salvaged is False
    assert len(model.calls) == 2
    seen = model.calls[1].messages
    assert isinstance(seen[-1], ToolMessage)
    assert (seen[-1].content, seen[-1].tool_call_id) == ("12", "c1")


async def test_loop_cut_on_third_identical_call_after_two_executions() -> None:
    script = [
        turn("", call("lookup", {"key": "x"}, f"c{i}"), finish="tool_calls") for i in range(3)
    ] + [turn("never reached")]
    model, agent, recorder = make(script)
    with capture_logs() as logs:
        response = await agent.run("find x", run_id="loop")

    assert len(model.calls) == 3
    executed = [r for r in tool_results(response.messages) if r.status != "error"]
    assert [r.content for r in executed] == ["value-of-x", "value-of-x"]
    assert response.final_response == ""
    assert response.stop_reason == "tool_use"
    assert response.termination_reason == "tool_calls_with_no_text"
    assert response.ended_by == "loop_detected"
    assert response.iterations == 3
    assert recorder.of("react_loop_end") == [
        ReactLoopEndEvent(
            run_id="loop",
            iteration_index=2,
            content_type="str",
            has_tool_calls=True,
            tool_call_count=1,
            termination_reason="tool_calls_with_no_text",
        )
    ]
    [line] = bail_logs(logs)
    assert line == {
        "event": SILENT_BAIL_LOG_EVENT,
        "log_level": "info",
        "iteration_index": 2,
        "content_type": "str",
        "has_tool_calls": True,
        "tool_call_count": 1,
        "termination_reason": "tool_calls_with_no_text",
        "run_id": "loop",
    }
    assert recorder.kinds() == ["agent_start"] + ["llm_end"] * 3 + ["react_loop_end", "agent_end"]
    assert recorder.of("agent_end")[0].final_response == ""
    assert_calls_saw_valid_history(model.calls)


async def test_loop_cut_salvages_text_of_the_terminal_turn() -> None:
    script = [
        turn("Checking x again.", call("lookup", {"key": "x"}, f"c{i}"), finish="tool_calls")
        for i in range(3)
    ]
    _model, agent, recorder = make(script)
    response = await agent.run("find x")

    assert response.final_response == "Checking x again."
    assert response.salvaged is True
    assert response.termination_reason is None
    assert response.ended_by == "loop_detected"
    assert recorder.of("react_loop_end") == []


async def test_loop_detection_counts_only_the_window() -> None:
    # Window 4 holds at most two of the identical calls (call, result, call, result, call).
    script = [
        turn("", call("lookup", {"key": "x"}, f"c{i}"), finish="tool_calls") for i in range(4)
    ] + [turn("Done.", finish="stop")]
    model, agent, _ = make(script, loop_detection_window=4)
    response = await agent.run("find x")

    assert response.final_response == "Done."
    assert len(model.calls) == 5
    assert len(tool_results(response.messages)) == 4


async def test_different_arguments_are_not_a_loop() -> None:
    script = [
        turn("", call("lookup", {"key": key}, f"c{key}"), finish="tool_calls")
        for key in ("a", "b", "c", "d")
    ] + [turn("Found them all.", finish="stop")]
    model, agent, _ = make(script)
    response = await agent.run("find four")

    assert response.final_response == "Found them all."
    assert len(model.calls) == 5


async def test_recursion_limit_caps_model_calls_and_bails_without_text() -> None:
    script = [
        turn("", call("lookup", {"key": str(i)}, f"c{i}"), finish="tool_calls") for i in range(6)
    ]
    model, agent, recorder = make(script, recursion_limit=3)
    response = await agent.run("keep going", run_id="cap")

    assert len(model.calls) == 3
    assert len([r for r in tool_results(response.messages) if r.status != "error"]) == 2
    assert response.final_response == ""
    assert response.ended_by == "recursion_limit"
    assert response.termination_reason == "tool_calls_with_no_text"
    [event] = recorder.of("react_loop_end")
    assert (event.iteration_index, event.tool_call_count) == (2, 1)
    assert model.remaining == 3


async def test_recursion_limit_salvages_text() -> None:
    script = [
        turn(f"Step {i}.", call("lookup", {"key": str(i)}, f"c{i}"), finish="tool_calls")
        for i in range(3)
    ]
    model, agent, recorder = make(script, recursion_limit=2)
    response = await agent.run("keep going")

    assert response.final_response == "Step 1."
    assert response.salvaged is True
    assert len(model.calls) == 2
    assert recorder.of("react_loop_end") == []


async def test_recursion_limit_one_makes_exactly_one_call() -> None:
    model, agent, _ = make(
        [turn("", call("add", {"a": 1, "b": 2}), finish="tool_calls")] * 2, recursion_limit=1
    )
    response = await agent.run("add")
    assert len(model.calls) == 1
    assert response.termination_reason == "tool_calls_with_no_text"


# --- path 3: empty completion ---------------------------------------------------------------


@pytest.mark.parametrize(("content", "content_type"), [("", "str"), ([], "list"), ("   \n", "str")])
async def test_empty_completion_is_a_silent_bail(content: Any, content_type: str) -> None:
    _model, agent, recorder = make([turn(content, finish="stop")])
    with capture_logs() as logs:
        response = await agent.run("hello", run_id="empty")

    assert response.final_response == ""
    assert response.stop_reason == "end_turn"
    assert response.termination_reason == "no_content_no_tool_calls"
    assert response.ended_by == "no_tool_calls"
    [event] = recorder.of("react_loop_end")
    assert event == ReactLoopEndEvent(
        "empty",
        0,
        content_type,
        False,
        0,
        "no_content_no_tool_calls",  # type: ignore[arg-type]
    )
    [line] = bail_logs(logs)
    assert (line["content_type"], line["has_tool_calls"], line["tool_call_count"]) == (
        content_type,
        False,
        0,
    )
    assert line["termination_reason"] == "no_content_no_tool_calls"


async def test_thinking_only_turn_cut_at_max_tokens_is_a_silent_bail() -> None:
    blocks = [{"type": "thinking", "thinking": "Long reasoning...", "signature": "s"}]
    _, agent, recorder = make([turn(blocks, stop="max_tokens")], max_length_recoveries=2)
    response = await agent.run("think hard")

    assert response.final_response == ""
    assert response.stop_reason == "max_tokens"
    assert response.termination_reason == "no_content_no_tool_calls"
    assert recorder.of("react_loop_end")[0].content_type == "list"


# --- bare EOF (no stop reason) ----------------------------------------------------------------


async def test_missing_stop_reason_without_tool_calls_is_terminal() -> None:
    model, agent, _ = make([turn("All done."), turn("must not be called")])
    response = await agent.run("go")
    assert response.final_response == "All done."
    assert response.stop_reason == "end_turn"
    assert len(model.calls) == 1


async def test_missing_stop_reason_with_tool_calls_runs_the_tools() -> None:
    model, agent, _ = make([turn("Adding.", call("add", {"a": 2, "b": 3})), turn("It is 5.")])
    response = await agent.run("2+3")
    assert response.final_response == "It is 5."
    assert len(model.calls) == 2
    assert model.calls[1].messages[-1].content == "5"


# --- synthesis -------------------------------------------------------------------------------


async def test_synthesis_recovers_a_silent_bail_with_one_call_without_tools() -> None:
    script = [
        turn("", call("lookup", {"key": "x"}, f"c{i}"), finish="tool_calls") for i in range(3)
    ] + [turn("x is value-of-x.", finish="stop", usage=(40, 6))]
    model, agent, recorder = make(script, synthesize_on_empty_final=True)
    with capture_logs() as logs:
        response = await agent.run("what is x?", run_id="syn")

    assert response.final_response == "x is value-of-x."
    assert response.synthesized is True
    assert response.termination_reason == "tool_calls_with_no_text"
    assert response.salvaged is False
    assert response.iterations == 3
    assert len(model.calls) == 4
    synthesis = model.calls[3]
    assert synthesis.tools_bound is False
    assert all(c.tools_bound for c in model.calls[:3])
    [prompt] = synthesis.messages
    assert isinstance(prompt, HumanMessage)
    assert "what is x?" in prompt.content and "value-of-x" in prompt.content
    assert "summarise the work" in str(prompt.content)
    llm = recorder.of("llm_end")
    assert [e.node_name for e in llm] == [NODE_REACT] * 3 + [NODE_SYNTHESIZE_FALLBACK]
    assert [e.iteration_index for e in llm] == [0, 1, 2, 3]
    assert (llm[3].output, llm[3].usage["total_tokens"]) == ("x is value-of-x.", 46)
    assert recorder.kinds()[-3:] == ["react_loop_end", "llm_end", "agent_end"]
    assert recorder.of("agent_end")[0].final_response == "x is value-of-x."
    assert len(bail_logs(logs)) == 1


async def test_synthesis_that_returns_nothing_leaves_the_response_empty() -> None:
    model, agent, recorder = make(
        [turn("", finish="stop"), turn("")], synthesize_on_empty_final=True
    )
    response = await agent.run("hi")
    assert (response.final_response, response.synthesized) == ("", False)
    assert response.termination_reason == "no_content_no_tool_calls"
    assert len(model.calls) == 2
    assert recorder.of("llm_end")[1].node_name == NODE_SYNTHESIZE_FALLBACK


async def test_salvaged_text_suppresses_synthesis() -> None:
    model, agent, recorder = make(
        [
            turn(
                "Here is the answer.",
                call("add", {"a": 1, "b": 1}),
                finish="stop",
                model="qwen3-max",
            ),
            turn("no"),
        ],
        synthesize_on_empty_final=True,
    )
    response = await agent.run("1+1")
    assert response.final_response == "Here is the answer."
    assert response.synthesized is False
    assert len(model.calls) == 1
    assert recorder.of("react_loop_end") == []


async def test_synthesis_is_off_by_default() -> None:
    model, agent, _ = make([turn("", finish="stop"), turn("should not be used")])
    response = await agent.run("hi")
    assert response.final_response == ""
    assert len(model.calls) == 1


async def test_streaming_bail_emits_loop_end_but_never_synthesises() -> None:
    model, agent, recorder = make(
        [turn("", call("lookup", {"key": "x"}, f"c{i}"), finish="tool_calls") for i in range(3)]
        + [turn("synthesis must not run")],
        synthesize_on_empty_final=True,
    )
    events = [event async for event in agent.stream("find x", run_id="s")]

    final = events[-1]
    assert isinstance(final, StreamFinal)
    assert final.final_response == ""
    assert final.response.termination_reason == "tool_calls_with_no_text"
    assert final.response.synthesized is False
    assert len(model.calls) == 3
    assert all(c.streamed for c in model.calls)
    assert recorder.kinds().count("agent_start") == 1
    assert recorder.kinds().count("agent_end") == 1
    assert len(recorder.of("react_loop_end")) == 1
    assert recorder.of("agent_end")[0].outcome == "completed"


async def test_streaming_yields_deltas_that_join_to_the_final_response() -> None:
    text = "The capital of France is Paris, on the Seine."
    _model, agent, _ = make([turn(text, finish="stop")])
    events = [event async for event in agent.stream("capital?")]
    deltas = [e.text for e in events if isinstance(e, StreamTextDelta)]
    assert len(deltas) > 1
    assert "".join(deltas) == text
    assert isinstance(events[-1], StreamFinal)
    assert events[-1].final_response == text


async def test_streaming_salvages_forced_finish_text() -> None:
    _model, agent, recorder = make(
        [turn("Salvaged words.", call("add", {"a": 1, "b": 1}), finish="stop", model="qwen-plus")]
    )
    events = [event async for event in agent.stream("1+1")]
    assert isinstance(events[-1], StreamFinal)
    assert events[-1].response.final_response == "Salvaged words."
    assert events[-1].response.salvaged is True
    assert recorder.of("react_loop_end") == []


def test_log_line_is_info_level_through_structlog() -> None:
    _model, agent, _ = make([turn("", finish="stop")])
    with capture_logs() as logs:
        agent.run_sync("hi")
    [line] = bail_logs(logs)
    assert line["log_level"] == "info"
