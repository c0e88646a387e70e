"""Each loop event names the call it belongs to, and a bail counts every call it cut.

A streamed tool call is paired with the model call that requested it (its index, not the next
one's); a bail counts unparseable tool calls beside the valid ones; the forced tool choice the
resolver sees is what the previous iteration forced, released to None.
"""

from __future__ import annotations

from typing import Any

from symfonic_otel.agent import FrameworkConfig, ReactAgent
from symfonic_otel.agent.streaming import StreamTextDelta, StreamToolCall
from symfonic_otel.testing.scripted import ScriptedChatModel
from tests.support.agent_support import TOOLS, Recorder, call, invalid_call, turn


async def test_a_streamed_tool_call_names_the_model_call_that_requested_it() -> None:
    model = ScriptedChatModel(
        [
            turn("", call("add", {"a": 1, "b": 2}, "c1"), finish="tool_calls"),
            turn("", call("lookup", {"key": "k"}, "c2"), finish="tool_calls"),
            turn("three", finish="stop"),
        ]
    )
    agent = ReactAgent(model, TOOLS)
    events = [event async for event in agent.stream("q")]
    calls = [(e.id, e.iteration_index) for e in events if isinstance(e, StreamToolCall)]
    assert calls == [("c1", 0), ("c2", 1)]
    deltas = {e.iteration_index for e in events if isinstance(e, StreamTextDelta)}
    assert deltas == {2}


async def test_a_bail_on_unparseable_tool_calls_counts_them() -> None:
    bad = invalid_call("c9", '{"a": ', "Expecting value")
    model = ScriptedChatModel(
        [turn("", call("add", {"a": 1, "b": 2}, "c1"), invalid_tool_calls=[bad])]
    )
    recorder = Recorder()
    agent = ReactAgent(
        model, TOOLS, config=FrameworkConfig(recursion_limit=1), callbacks=[recorder]
    )
    response = await agent.run("q")
    assert response.termination_reason == "tool_calls_with_no_text"
    [bail] = recorder.of("react_loop_end")
    assert bail.tool_call_count == 2 and bail.has_tool_calls
    assert bail.iteration_index == 0


class _ForceOnce:
    """Forces ``add`` on the first loop call only, and records the states it was shown."""

    def __init__(self) -> None:
        self.states: list[dict[str, Any]] = []

    async def resolve(self, state: dict[str, Any], messages: list[Any]) -> str | None:
        self.states.append(dict(state))
        return "add" if state["iteration_index"] == 0 else None


async def test_the_resolver_sees_what_the_previous_iteration_forced_then_the_release() -> None:
    model = ScriptedChatModel(
        [
            turn("", call("add", {"a": 1, "b": 2}, "c1"), finish="tool_calls"),
            turn("", call("lookup", {"key": "k"}, "c2"), finish="tool_calls"),
            turn("done", finish="stop"),
        ]
    )
    resolver = _ForceOnce()
    agent = ReactAgent(model, TOOLS, tool_choice_resolver=resolver)
    await agent.run("q")
    seen = [(s["iteration_index"], s["forced_tool_choice"]) for s in resolver.states]
    assert seen == [(0, None), (1, "add"), (2, None)]


async def test_the_call_cap_note_counts_loop_calls_not_the_synthesis_after_them() -> None:
    looping = [
        turn("", call("add", {"a": n, "b": 1}, f"c{n}"), finish="tool_calls") for n in range(2)
    ]
    model = ScriptedChatModel([*looping, turn("recovered summary")])
    config = FrameworkConfig(
        recursion_limit=2, synthesize_on_empty_final=True, stop_reason_notes=True
    )
    response = await ReactAgent(model, TOOLS, config=config).run("q")
    assert response.synthesized and response.run_stop_reason == "recursion_limit"
    assert response.stop_note == "[no final answer within the limit of 2 model calls]"
