"""The other Symfonic events of the loop: LLM start, nodes, tool calls, text deltas.

Every scenario runs on ``run`` and ``stream`` with hand-written recording handlers and checks the
whole sequence: order, NodeStart closed by NodeEnd or NodeError, ToolCallStart paired with its
ToolResult by ``tool_call_id``.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from structlog.testing import capture_logs

from symfonic_otel.agent import CallbackDispatcher, FrameworkConfig, ReactAgent, StreamFinal
from symfonic_otel.agent.dispatch import HANDLER_METHODS
from symfonic_otel.agent.history import INTERRUPTED
from symfonic_otel.agent.streaming import StreamTextDelta
from symfonic_otel.events import (
    LLMStartEvent,
    NodeEndEvent,
    NodeErrorEvent,
    NodeStartEvent,
    TextDeltaEvent,
    ToolCallStartEvent,
    ToolResultEvent,
)
from symfonic_otel.semconv import NODE_REACT, NODE_SYNTHESIZE_FALLBACK, NODE_TOOLS
from symfonic_otel.testing.scripted import ScriptedChatModel
from tests.support.agent_support import (
    TOOLS,
    FullRecorder,
    Recorder,
    call,
    invalid_call,
    pairing_problems,
    turn,
)

Mode = Literal["run", "stream"]
MODES = pytest.mark.parametrize("mode", ["run", "stream"])

NEW_METHODS = (
    "on_llm_start",
    "on_node_start",
    "on_node_end",
    "on_node_error",
    "on_tool_call_start",
    "on_tool_result",
    "on_text_delta",
)


class ProviderDownError(RuntimeError):
    pass


async def drive(agent: ReactAgent, query: str, mode: Mode, **kwargs: Any) -> Any:
    if mode == "run":
        return await agent.run(query, **kwargs)
    final = None
    async for event in agent.stream(query, **kwargs):
        if isinstance(event, StreamFinal):
            final = event.response
    return final


def one_tool_round() -> list[AIMessage]:
    return [
        turn("", call("add", {"a": 1, "b": 2}, "c1"), finish="tool_calls"),
        turn("The sum is 3.", finish="stop"),
    ]


# --- the sequence of a run ------------------------------------------------------------------------


@MODES
async def test_a_tool_round_is_framed_by_nodes_with_paired_tool_events(mode: Mode) -> None:
    recorder = FullRecorder()
    agent = ReactAgent(ScriptedChatModel(one_tool_round()), TOOLS, callbacks=[recorder])
    response = await drive(agent, "1+2", mode, run_id="run-1")

    announced = ["tool_call_start:announced:c1"] if mode == "stream" else []
    assert recorder.sequence() == [
        "agent_start",
        "node_start:react",
        "llm_start",
        *announced,
        "llm_end",
        "node_end:react",
        "node_start:tools",
        "tool_call_start:executing:c1",
        "tool_result:c1",
        "node_end:tools",
        "node_start:react",
        "llm_start",
        "llm_end",
        "node_end:react",
        "agent_end",
    ]
    assert pairing_problems(recorder.events) == []
    [end] = recorder.of("agent_end")
    assert len(recorder.of("node_start")) == end.node_count == 3
    assert {e.run_id for _, e in recorder.events} == {"run-1"}

    assert all(isinstance(e, NodeStartEvent) for e in recorder.of("node_start"))
    node_ends = recorder.of("node_end")
    assert all(isinstance(e, NodeEndEvent) and e.duration_ms >= 0 for e in node_ends)
    assert sum(e.duration_ms for e in node_ends) <= end.duration_ms
    # A model node lasts at least as long as the call it wraps.
    react_ends = [e for e in node_ends if e.node_name == NODE_REACT]
    for node, llm in zip(react_ends, recorder.of("llm_end"), strict=True):
        assert node.duration_ms >= llm.duration_ms

    executing = [e for e in recorder.of("tool_call_start") if e.phase == "executing"]
    assert executing == [
        ToolCallStartEvent(
            tool_call_id="c1",
            tool_name="add",
            arguments={"a": 1, "b": 2},
            phase="executing",
            run_id="run-1",
        )
    ]
    assert recorder.of("tool_result") == [
        ToolResultEvent(
            tool_call_id="c1", tool_name="add", result="3", run_id="run-1", error_type=None
        )
    ]
    assert response.final_response == "The sum is 3."


@MODES
async def test_llm_start_carries_the_model_the_node_and_a_snapshot_of_the_messages(
    mode: Mode,
) -> None:
    recorder = FullRecorder()
    history: list[Any] = [SystemMessage(content="You are terse."), HumanMessage("hello")]
    history.append(AIMessage(content="Hi."))
    model = ScriptedChatModel(one_tool_round(), model_name="gpt-4o-mini")
    agent = ReactAgent(model, TOOLS, callbacks=[recorder])
    await drive(agent, "1+2", mode, history=history)

    first, second = recorder.of("llm_start")
    assert isinstance(first, LLMStartEvent)
    assert (first.model, first.node_name, first.system_prompt) == (
        "gpt-4o-mini",
        NODE_REACT,
        "You are terse.",
    )
    assert first.turn_index == 0
    # What the model was sent, frozen at the call: the run appended to the history since.
    assert [type(m).__name__ for m in first.messages] == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "HumanMessage",
    ]
    assert [type(m).__name__ for m in second.messages][-3:] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
    ]
    assert first.messages is not history and len(history) == 7
    assert [call.messages for call in model.calls] == [
        tuple(first.messages),
        tuple(second.messages),
    ]


async def test_stream_emits_text_deltas_inside_their_node_that_add_up_to_the_text() -> None:
    recorder = FullRecorder()
    answer = "A streamed answer long enough for several chunks."
    model = ScriptedChatModel(
        [
            turn("Let me add.", call("add", {"a": 1, "b": 2}, "c1"), finish="tool_calls"),
            turn(answer, finish="stop"),
        ],
        chunk_size=5,
    )
    agent = ReactAgent(model, TOOLS, callbacks=[recorder])
    streamed = [e async for e in agent.stream("1+2") if isinstance(e, StreamTextDelta)]

    deltas = recorder.of("text_delta")
    assert all(isinstance(e, TextDeltaEvent) for e in deltas)
    assert "".join(e.text for e in deltas) == "Let me add." + answer
    assert [e.text for e in deltas] == [e.text for e in streamed]
    run_id = recorder.of("agent_start")[0].run_id
    assert {(e.node_name, e.run_id) for e in deltas} == {(NODE_REACT, run_id)}
    assert len(deltas) == -(-len("Let me add.") // 5) + -(-len(answer) // 5)  # ceil: chunks
    sequence = recorder.sequence(deltas=True)
    # The first node: deltas of its text, then the call announced as the stream reveals it.
    first_node = sequence[: sequence.index("node_end:react") + 1]
    assert first_node == [
        "agent_start",
        "node_start:react",
        "llm_start",
        "text_delta",
        "text_delta",
        "text_delta",
        "tool_call_start:announced:c1",
        "llm_end",
        "node_end:react",
    ]
    [announced] = [e for e in recorder.of("tool_call_start") if e.phase == "announced"]
    assert (announced.tool_name, announced.arguments) == ("add", None)  # not streamed yet
    assert pairing_problems(recorder.events) == []


async def test_run_emits_no_text_deltas_and_no_announced_calls() -> None:
    recorder = FullRecorder()
    agent = ReactAgent(ScriptedChatModel(one_tool_round()), TOOLS, callbacks=[recorder])
    await agent.run("1+2")
    assert recorder.of("text_delta") == []
    assert [e.phase for e in recorder.of("tool_call_start")] == ["executing"]


# --- several calls, failing tools, unparseable arguments ----------------------------------------


@MODES
async def test_parallel_calls_pair_by_id_whatever_their_outcome(mode: Mode) -> None:
    recorder = FullRecorder()
    model = ScriptedChatModel(
        [
            turn(
                "",
                call("add", {"a": 2, "b": 2}, "c1"),
                call("explode", {"reason": "tests"}, "c2"),
                call("no_such_tool", {}, "c3"),
                call("lookup", {"key": "k"}, "c4"),
                finish="tool_calls",
            ),
            turn("done", finish="stop"),
        ]
    )
    await drive(ReactAgent(model, TOOLS, callbacks=[recorder]), "q", mode)

    assert pairing_problems(recorder.events) == []
    starts = {e.tool_call_id: e for e in recorder.of("tool_call_start") if e.phase == "executing"}
    results = {e.tool_call_id: e for e in recorder.of("tool_result")}
    assert list(starts) == ["c1", "c2", "c3", "c4"]  # dispatched in call order
    assert set(results) == set(starts)
    assert {k: (e.tool_name, e.arguments) for k, e in starts.items()} == {
        "c1": ("add", {"a": 2, "b": 2}),
        "c2": ("explode", {"reason": "tests"}),
        "c3": ("no_such_tool", {}),
        "c4": ("lookup", {"key": "k"}),
    }
    assert {k: e.is_error for k, e in results.items()} == {
        "c1": False,
        "c2": True,
        "c3": True,
        "c4": False,
    }
    assert results["c1"].result == "4" and results["c4"].result == "value-of-k"
    assert "ValueError" in results["c2"].result and "no_such_tool" in results["c3"].result
    # The exception's type where a tool raised; an unknown tool raised nothing.
    assert {k: e.error_type for k, e in results.items()} == {
        "c1": None,
        "c2": "ValueError",
        "c3": None,
        "c4": None,
    }
    # A failing tool is a result, not a node failure.
    assert recorder.of("node_error") == []
    assert recorder.sequence().count("node_end:tools") == 1


async def test_unparseable_arguments_get_a_start_and_an_error_result() -> None:
    recorder = FullRecorder()
    broken = turn(
        "",
        call("add", {"a": 1, "b": 1}, "c1"),
        invalid_tool_calls=[invalid_call("c2", '{"a": 1,', "truncated JSON")],
        finish="tool_calls",
    )
    model = ScriptedChatModel([broken, turn("ok", finish="stop")])
    await ReactAgent(model, TOOLS, callbacks=[recorder]).run("q")

    assert pairing_problems(recorder.events) == []
    [bad] = [e for e in recorder.of("tool_call_start") if e.tool_call_id == "c2"]
    assert (bad.tool_name, bad.arguments, bad.phase) == ("add", None, "executing")
    [result] = [e for e in recorder.of("tool_result") if e.tool_call_id == "c2"]
    assert result.is_error and "could not be parsed" in result.result


# --- errors and interruptions end their node with NodeError ------------------------------------


@MODES
async def test_a_failing_model_call_ends_its_node_with_node_error(mode: Mode) -> None:
    recorder = FullRecorder()
    model = ScriptedChatModel(
        [
            turn("", call("add", {"a": 1, "b": 2}, "c1"), finish="tool_calls"),
            ProviderDownError("503 from the provider"),
        ]
    )
    with pytest.raises(ProviderDownError):
        await drive(ReactAgent(model, TOOLS, callbacks=[recorder]), "q", mode, run_id="r-err")

    assert recorder.sequence()[-5:] == [
        "node_start:react",
        "llm_start",
        "llm_end",
        "node_error:react",
        "agent_end",
    ]
    assert pairing_problems(recorder.events) == []
    [error] = recorder.of("node_error")
    assert error == NodeErrorEvent(
        node_name=NODE_REACT,
        run_id="r-err",
        error="503 from the provider",
        error_type="ProviderDownError",
    )
    assert recorder.of("llm_end")[-1].outcome == "error"
    assert recorder.of("agent_end")[0].outcome == "error"


@tool
async def hang(reason: str) -> str:
    """Waits until it is cancelled."""
    await asyncio.Event().wait()
    return "never"


async def _cancel_once(recorder: FullRecorder, kind: str, task: asyncio.Task[Any]) -> None:
    for _ in range(500):
        if recorder.of(kind):
            break
        await asyncio.sleep(0.01)
    assert recorder.of(kind), f"no {kind} before the deadline"
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@MODES
async def test_a_cancelled_tool_round_closes_its_calls_and_its_node(mode: Mode) -> None:
    recorder = FullRecorder()
    model = ScriptedChatModel(
        [
            turn(
                "",
                call("add", {"a": 1, "b": 2}, "c1"),
                call("hang", {"reason": "cancel me"}, "c2"),
                finish="tool_calls",
            )
        ]
    )
    agent = ReactAgent(model, [*TOOLS, hang], callbacks=[recorder])
    task = asyncio.ensure_future(drive(agent, "q", mode))
    await _cancel_once(recorder, "tool_result", task)

    assert pairing_problems(recorder.events) == []
    results = {e.tool_call_id: e for e in recorder.of("tool_result")}
    assert (results["c1"].is_error, results["c1"].result) == (False, "3")
    assert (results["c2"].is_error, results["c2"].result) == (True, INTERRUPTED)
    assert results["c2"].error_type == "CancelledError"
    assert recorder.sequence()[-2:] == ["node_error:tools", "agent_end"]
    [error] = recorder.of("node_error")
    assert (error.node_name, error.error_type) == (NODE_TOOLS, "CancelledError")
    assert recorder.of("agent_end")[0].outcome == "cancelled"


@MODES
async def test_a_cancelled_model_call_ends_its_node_with_node_error(mode: Mode) -> None:
    recorder = FullRecorder()
    model = ScriptedChatModel([turn("late", finish="stop")], latency_s=3600)
    task = asyncio.ensure_future(drive(ReactAgent(model, TOOLS, callbacks=[recorder]), "q", mode))
    await _cancel_once(recorder, "llm_start", task)

    assert recorder.sequence() == [
        "agent_start",
        "node_start:react",
        "llm_start",
        "llm_end",
        "node_error:react",
        "agent_end",
    ]
    assert pairing_problems(recorder.events) == []
    assert recorder.of("node_error")[0].error_type == "CancelledError"


async def test_a_stream_closed_early_still_closes_the_open_node() -> None:
    recorder = FullRecorder()
    model = ScriptedChatModel([turn("a long answer in many pieces", finish="stop")], chunk_size=4)
    stream = ReactAgent(model, TOOLS, callbacks=[recorder]).stream("q")
    async for event in stream:
        assert isinstance(event, StreamTextDelta)
        break
    await stream.aclose()

    assert pairing_problems(recorder.events) == []
    assert recorder.sequence()[-3:] == ["llm_end", "node_error:react", "agent_end"]
    assert recorder.of("agent_end")[0].outcome == "cancelled"


# --- the other model call sites are nodes too -----------------------------------------------------


async def test_synthesis_is_a_node_of_its_own_after_the_silent_bail() -> None:
    recorder = FullRecorder()
    model = ScriptedChatModel([turn("", finish="stop"), turn("Recovered answer.", finish="stop")])
    config = FrameworkConfig(synthesize_on_empty_final=True)
    response = await ReactAgent(model, TOOLS, config=config, callbacks=[recorder]).run("q")

    assert response.synthesized
    assert recorder.sequence() == [
        "agent_start",
        "node_start:react",
        "llm_start",
        "llm_end",
        "node_end:react",
        "react_loop_end",
        f"node_start:{NODE_SYNTHESIZE_FALLBACK}",
        "llm_start",
        "llm_end",
        f"node_end:{NODE_SYNTHESIZE_FALLBACK}",
        "agent_end",
    ]
    synthesis = recorder.of("llm_start")[1]
    assert synthesis.node_name == NODE_SYNTHESIZE_FALLBACK
    assert [type(m) for m in synthesis.messages] == [HumanMessage]
    assert len(recorder.of("node_start")) == recorder.of("agent_end")[0].node_count
    assert pairing_problems(recorder.events) == []


async def test_a_failing_synthesis_node_ends_with_node_error_and_the_run_completes() -> None:
    recorder = FullRecorder()
    model = ScriptedChatModel([turn("", finish="stop"), ProviderDownError("recovery failed")])
    config = FrameworkConfig(synthesize_on_empty_final=True)
    response = await ReactAgent(model, TOOLS, config=config, callbacks=[recorder]).run("q")

    assert response.final_response == ""
    assert recorder.sequence()[-2:] == [f"node_error:{NODE_SYNTHESIZE_FALLBACK}", "agent_end"]
    assert recorder.of("agent_end")[0].outcome == "completed"
    assert pairing_problems(recorder.events) == []


# --- duck typing: old handlers, partial handlers, broken handlers -----------------------------


def test_the_dispatcher_knows_the_new_methods() -> None:
    assert set(NEW_METHODS) <= set(HANDLER_METHODS)
    full = CallbackDispatcher([FullRecorder(), Recorder(), object()])
    for name in NEW_METHODS:
        assert len(getattr(full, name.removeprefix("on_"))) == 1
        assert getattr(CallbackDispatcher([Recorder()]), name.removeprefix("on_")) == ()


@MODES
async def test_a_handler_without_the_new_methods_still_gets_its_five(mode: Mode) -> None:
    old, full = Recorder(), FullRecorder()
    seen: list[str] = []

    class OnlyToolResults:
        def on_tool_result(self, event: Any) -> None:
            seen.append(f"result:{event.tool_call_id}")

    class OnlyNodeEnds:
        async def on_node_end(self, event: Any) -> None:
            seen.append(f"end:{event.node_name}")

    callbacks = [old, OnlyToolResults(), OnlyNodeEnds(), full]
    agent = ReactAgent(ScriptedChatModel(one_tool_round()), TOOLS, callbacks=callbacks)
    await drive(agent, "1+2", mode)

    assert old.kinds() == ["agent_start", "llm_end", "llm_end", "agent_end"]
    assert seen == ["end:react", "result:c1", "end:tools", "end:react"]
    five = {"agent_start", "llm_end", "agent_end"}
    assert [e for k, e in full.events if k in five] == [e for _, e in old.events]


@MODES
async def test_a_raising_new_method_is_logged_once_and_never_breaks_the_run(mode: Mode) -> None:
    class Broken:
        def on_node_start(self, event: Any) -> None:
            raise ValueError("node bug")

        async def on_tool_call_start(self, event: Any) -> None:
            raise KeyError(event.tool_name)

        def on_text_delta(self, event: Any) -> None:
            raise RuntimeError(event.text)

    recorder = FullRecorder()
    agent = ReactAgent(ScriptedChatModel(one_tool_round()), TOOLS, callbacks=[Broken(), recorder])
    with capture_logs() as logs:
        response = await drive(agent, "1+2", mode)

    assert response.final_response == "The sum is 3."
    assert pairing_problems(recorder.events) == []
    assert len(recorder.of("node_start")) == 3
    failed = sorted(entry["callback"] for entry in logs if entry.get("handler") == "Broken")
    expected = ["on_node_start", "on_tool_call_start"]
    if mode == "stream":
        expected.append("on_text_delta")
    assert failed == sorted(expected)
