"""History repair, tool errors, interrupts, provider errors; the history invariant as a property."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from symfonic_otel.agent import (
    FrameworkConfig,
    ReactAgent,
    StreamFinal,
    history_is_valid,
    repair_history,
)
from symfonic_otel.agent.history import INTERRUPTED, MISSING_RESULT
from symfonic_otel.testing.scripted import ScriptedChatModel
from tests.support.agent_support import (
    TOOLS,
    Recorder,
    assert_calls_saw_valid_history,
    call,
    invalid_call,
    turn,
    unanswered_calls,
)

# --- repair_history -------------------------------------------------------------------------


def test_repair_drops_orphan_and_duplicate_results_and_backfills_missing() -> None:
    ai = AIMessage(
        content="",
        tool_calls=[call("add", {"a": 1, "b": 2}, "a1"), call("lookup", {"key": "k"}, "a2")],
    )
    history: list[BaseMessage] = [
        HumanMessage(content="q"),
        ToolMessage(content="orphan", tool_call_id="zz"),
        ai,
        ToolMessage(content="3", tool_call_id="a1"),
        ToolMessage(content="3 again", tool_call_id="a1"),
        HumanMessage(content="next"),
        ToolMessage(content="late", tool_call_id="a2"),
    ]
    assert repair_history(history) is True
    assert [(type(m).__name__, m.content) for m in history] == [
        ("HumanMessage", "q"),
        ("AIMessage", ""),
        ("ToolMessage", "3"),
        ("ToolMessage", MISSING_RESULT),
        ("HumanMessage", "next"),
    ]
    assert history[1] is ai  # assistant messages are never rebuilt
    assert unanswered_calls(history) == []
    assert repair_history(history) is False


def test_repair_orders_results_by_call_order_and_keeps_valid_history_untouched() -> None:
    ai = AIMessage(content="", tool_calls=[call("add", {}, "x"), call("add", {}, "y")])
    history: list[BaseMessage] = [
        ai,
        ToolMessage(content="Y", tool_call_id="y"),
        ToolMessage(content="X", tool_call_id="x"),
    ]
    assert repair_history(history) is True
    assert [m.content for m in history[1:]] == ["X", "Y"]
    before = list(history)
    assert repair_history(history) is False
    assert all(a is b for a, b in zip(before, history, strict=True))
    assert history_is_valid(history)


async def test_caller_history_is_repaired_before_the_first_model_call() -> None:
    dangling = AIMessage(content="", tool_calls=[call("add", {"a": 1, "b": 1}, "old")])
    history: list[BaseMessage] = [HumanMessage(content="earlier"), dangling]
    model = ScriptedChatModel([turn("ok", finish="stop")])
    response = await ReactAgent(model, TOOLS).run("now", history=history)

    seen = model.calls[0].messages
    assert [type(m).__name__ for m in seen] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "HumanMessage",
    ]
    assert seen[2].content == MISSING_RESULT
    assert response.final_response == "ok"
    assert history[-1] is response.messages[-1]  # the caller's list was extended in place


# --- tool errors --------------------------------------------------------------------------------


async def test_tool_exception_becomes_an_error_result_the_model_reads() -> None:
    model = ScriptedChatModel(
        [
            turn("", call("explode", {"reason": "it"}), finish="tool_calls"),
            turn("The tool failed.", finish="stop"),
        ]
    )
    response = await ReactAgent(model, TOOLS).run("try")
    result = model.calls[1].messages[-1]
    assert isinstance(result, ToolMessage)
    assert (result.content, result.status) == ("Error: ValueError: cannot do it", "error")
    assert response.final_response == "The tool failed."


async def test_unknown_tool_becomes_an_error_result() -> None:
    model = ScriptedChatModel(
        [turn("", call("teleport", {}), finish="tool_calls"), turn("Sorry.", finish="stop")]
    )
    await ReactAgent(model, TOOLS).run("go")
    result = model.calls[1].messages[-1]
    assert isinstance(result, ToolMessage) and result.status == "error"
    assert result.content == (
        "Error: there is no tool named 'teleport'. Available tools: add, lookup, explode."
    )


async def test_parallel_calls_are_answered_in_call_order() -> None:
    model = ScriptedChatModel(
        [
            turn(
                "",
                call("lookup", {"key": "a"}, "p1"),
                call("add", {"a": 2, "b": 2}, "p2"),
                call("explode", {"reason": "x"}, "p3"),
                finish="tool_calls",
            ),
            turn("done", finish="stop"),
        ]
    )
    await ReactAgent(model, TOOLS).run("three at once")
    seen = model.calls[1].messages
    assert [(getattr(m, "tool_call_id", None), m.content) for m in seen[-3:]] == [
        ("p1", "value-of-a"),
        ("p2", "4"),
        ("p3", "Error: ValueError: cannot do x"),
    ]


async def test_unparseable_tool_call_is_answered_with_an_error() -> None:
    bad = turn(
        "", invalid_tool_calls=[invalid_call("b1", "{oops", "bad json")], finish="tool_calls"
    )
    model = ScriptedChatModel([bad, turn("retrying is pointless", finish="stop")])
    response = await ReactAgent(model, TOOLS).run("q")
    result = model.calls[1].messages[-1]
    assert isinstance(result, ToolMessage) and result.tool_call_id == "b1"
    assert result.status == "error" and "could not be parsed" in str(result.content)
    assert response.final_response == "retrying is pointless"


# --- interrupts and provider errors ---------------------------------------------------------


async def test_keyboard_interrupt_leaves_valid_history_and_ends_cancelled() -> None:
    recorder = Recorder()
    model = ScriptedChatModel(
        [turn("", call("add", {"a": 1, "b": 2}), finish="tool_calls"), KeyboardInterrupt()]
    )
    history: list[BaseMessage] = []
    with pytest.raises(KeyboardInterrupt):
        async for _ in ReactAgent(model, TOOLS, callbacks=[recorder]).stream("q", history=history):
            pass

    assert recorder.kinds() == ["agent_start", "llm_end", "llm_end", "agent_end"]
    end = recorder.of("agent_end")[0]
    assert (end.outcome, end.final_response) == ("cancelled", None)
    assert recorder.of("llm_end")[1].outcome == "cancelled"
    assert unanswered_calls(history) == []
    assert [m.content for m in history if isinstance(m, ToolMessage)] == ["3"]


async def test_interrupt_inside_a_tool_backfills_the_unfinished_call() -> None:
    @tool
    def hang(x: int) -> str:
        """Interrupted while running."""
        raise KeyboardInterrupt

    recorder = Recorder()
    model = ScriptedChatModel([turn("", call("hang", {"x": 1}, "h1"), finish="tool_calls")])
    history: list[BaseMessage] = []
    with pytest.raises(KeyboardInterrupt):
        await ReactAgent(model, [hang], callbacks=[recorder]).run("q", history=history)
    assert isinstance(history[-1], ToolMessage)
    assert (history[-1].tool_call_id, history[-1].content) == ("h1", INTERRUPTED)
    assert recorder.of("agent_end")[0].outcome == "cancelled"


async def test_task_cancellation_during_a_tool_ends_cancelled_with_valid_history() -> None:
    started = asyncio.Event()

    @tool
    async def slow(x: int) -> str:
        """Waits forever."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    recorder = Recorder()
    model = ScriptedChatModel(
        [turn("", call("slow", {"x": 1}, "s1"), call("slow", {"x": 2}, "s2"), finish="tool_calls")]
    )
    history: list[BaseMessage] = []
    task = asyncio.create_task(
        ReactAgent(model, [slow], callbacks=[recorder]).run("q", history=history)
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert recorder.kinds().count("agent_end") == 1
    assert recorder.of("agent_end")[0].outcome == "cancelled"
    assert [m.content for m in history if isinstance(m, ToolMessage)] == [INTERRUPTED] * 2
    assert unanswered_calls(history) == []


async def test_cancellation_during_a_model_call_ends_cancelled() -> None:
    recorder = Recorder()
    model = ScriptedChatModel([turn("late", finish="stop")], latency_s=3600)
    task = asyncio.create_task(ReactAgent(model, TOOLS, callbacks=[recorder]).run("q"))
    await asyncio.sleep(0.05)  # the model is now waiting out its latency
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert recorder.kinds() == ["agent_start", "llm_end", "agent_end"]
    assert recorder.of("llm_end")[0].outcome == "cancelled"
    assert recorder.of("agent_end")[0].outcome == "cancelled"


async def test_provider_error_ends_the_run_with_outcome_error() -> None:
    recorder = Recorder()
    model = ScriptedChatModel(
        [
            turn("", call("add", {"a": 1, "b": 2}), finish="tool_calls"),
            RuntimeError("503 from provider"),
        ]
    )
    history: list[BaseMessage] = []
    with pytest.raises(RuntimeError, match="503"):
        await ReactAgent(model, TOOLS, callbacks=[recorder]).run("q", history=history, run_id="e")
    assert recorder.kinds() == ["agent_start", "llm_end", "llm_end", "agent_end"]
    failed = recorder.of("llm_end")[1]
    assert (failed.outcome, failed.output, failed.iteration_index) == ("error", "", 1)
    assert recorder.of("agent_end")[0].outcome == "error"
    assert unanswered_calls(history) == []


async def test_stream_consumer_stopping_early_ends_the_run_once() -> None:
    recorder = Recorder()
    model = ScriptedChatModel([turn("A fairly long answer to stream.", finish="stop")])
    stream = ReactAgent(model, TOOLS, callbacks=[recorder]).stream("q")
    first = await stream.__anext__()
    assert first.text  # type: ignore[union-attr]
    await stream.aclose()
    assert recorder.kinds().count("agent_end") == 1
    assert recorder.of("agent_end")[0].outcome == "cancelled"


# --- the invariant as a property ------------------------------------------------------------------

ARGS = st.sampled_from([{"key": "a"}, {"key": "b"}])


@st.composite
def model_turns(draw: st.DrawFn, index: int, streaming: bool) -> Any:
    kind = draw(
        st.sampled_from(
            [
                "text",
                "empty",
                "calls",
                "calls",
                "calls",
                "text_calls",
                "error",
                "interrupt",
                "cancel",
            ]
        )
    )
    if kind == "text":
        return turn("answer", finish=draw(st.sampled_from(["stop", None, "length"])))
    if kind == "empty":
        return turn("", finish=draw(st.sampled_from(["stop", None])))
    if kind == "error":
        return RuntimeError("provider down")
    if kind in ("interrupt", "cancel") and streaming:
        return KeyboardInterrupt() if kind == "interrupt" else asyncio.CancelledError()
    if kind in ("interrupt", "cancel"):
        # ainvoke runs the model in a child task: interrupt inside a tool instead.
        return turn("", call("interrupting", {"key": "a"}, f"t{index}-i"), finish="tool_calls")
    count = draw(st.integers(1, 3))
    calls = []
    for n in range(count):
        name = draw(st.sampled_from(["lookup", "explode", "missing", "interrupting"]))
        args = draw(ARGS) if name != "explode" else {"reason": "r"}
        calls.append(call(name, args, f"t{index}-{n}"))
    text = "thinking aloud" if kind == "text_calls" else ""
    return turn(text, *calls, finish=draw(st.sampled_from(["tool_calls", "stop", None])))


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[Any], FrameworkConfig, bool]:
    streaming = draw(st.booleans())
    length = draw(st.integers(1, 8))
    script = [draw(model_turns(i, streaming)) for i in range(length)]
    config = FrameworkConfig(
        recursion_limit=draw(st.integers(1, 8)),
        loop_detection_threshold=draw(st.integers(2, 4)),
        loop_detection_window=draw(st.integers(1, 10)),
        synthesize_on_empty_final=draw(st.booleans()),
        max_length_recoveries=draw(st.integers(0, 2)),
    )
    return script, config, streaming


@tool
def interrupting(key: str) -> str:
    """A tool whose run is cancelled."""
    raise asyncio.CancelledError


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_every_model_call_sees_a_valid_history(
    scenario: tuple[list[Any], FrameworkConfig, bool],
) -> None:
    script, config, streaming = scenario
    model = ScriptedChatModel(script + ["filler"] * 10)
    recorder = Recorder()
    agent = ReactAgent(model, [*TOOLS, interrupting], config=config, callbacks=[recorder])
    history: list[BaseMessage] = []

    async def go() -> Any:
        if streaming:
            events = [e async for e in agent.stream("q", history=history)]
            assert isinstance(events[-1], StreamFinal)
            return events[-1].response
        return await agent.run("q", history=history)

    outcome = "completed"
    response = None
    try:
        response = asyncio.run(go())
    except RuntimeError:
        outcome = "error"
    except (KeyboardInterrupt, asyncio.CancelledError):
        outcome = "cancelled"

    assert_calls_saw_valid_history(model.calls)
    assert unanswered_calls(history) == []
    assert recorder.kinds().count("agent_start") == 1
    assert recorder.kinds().count("agent_end") == 1
    assert recorder.kinds()[0] == "agent_start" and recorder.kinds()[-1] == "agent_end"
    assert recorder.of("agent_end")[0].outcome == outcome
    loop_calls = [e for e in recorder.of("llm_end") if e.node_name == "react"]
    assert len(loop_calls) <= config.recursion_limit
    assert len(recorder.of("llm_end")) == len(model.calls)
    assert [e.iteration_index for e in recorder.of("llm_end")] == list(range(len(model.calls)))
    if response is not None:
        bails = recorder.of("react_loop_end")
        assert len(bails) == (1 if response.termination_reason else 0)
        if response.termination_reason is None:
            assert response.final_response.strip()
        elif not response.synthesized:
            assert response.final_response == ""
        if streaming:
            assert response.synthesized is False
        assert response.iterations == len(loop_calls)
