"""Seed 001: the forced tool choice, asked once per iteration on ``run`` and ``stream``."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_openai import ChatOpenAI
from structlog.testing import capture_logs

from symfonic_otel.agent import (
    ForcedToolChoiceResolver,
    FrameworkConfig,
    ReactAgent,
    StreamFinal,
)
from symfonic_otel.agent.resolver import RESOLVER_RAISED, RESOLVER_UNKNOWN_TOOL
from symfonic_otel.testing.scripted import ScriptedChatModel
from tests.support.agent_support import TOOLS, Recorder, call, lines_of_kind, log_text, turn
from tests.support.wire_server import WireResponse, serve

SECRET = "customer-card-4111"


class ForceLookupUntilAnswered:
    """Forces ``lookup`` until this run has a lookup result, then lets the model choose."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, Any], int]] = []

    async def resolve(self, state: dict[str, Any], messages: list[Any]) -> str | None:
        self.seen.append((dict(state), len(messages)))
        current = messages[state["run_start"] :]
        if any(isinstance(m, ToolMessage) and m.name == "lookup" for m in current):
            return None
        return "lookup"


class Raising:
    def __init__(self) -> None:
        self.calls = 0

    async def resolve(self, state: dict[str, Any], messages: list[Any]) -> str | None:
        self.calls += 1
        raise ValueError(f"cannot decide for {SECRET}")


def script() -> list[Any]:
    return [
        turn("", call("lookup", {"key": "k"}, "l1"), finish="tool_calls"),
        turn("The value is value-of-k.", finish="stop"),
    ]


def test_the_protocol_is_runtime_checkable() -> None:
    assert isinstance(ForceLookupUntilAnswered(), ForcedToolChoiceResolver)
    assert not isinstance(object(), ForcedToolChoiceResolver)


@pytest.mark.parametrize("path", ["run", "stream"])
async def test_resolver_forces_then_releases_on_each_path(path: str) -> None:
    resolver = ForceLookupUntilAnswered()
    recorder = Recorder()
    model = ScriptedChatModel(script())
    agent = ReactAgent(model, TOOLS, tool_choice_resolver=resolver, callbacks=[recorder])
    if path == "run":
        response = await agent.run("what is k?", run_id="r")
    else:
        events = [e async for e in agent.stream("what is k?", run_id="r")]
        assert isinstance(events[-1], StreamFinal)
        response = events[-1].response

    assert response.final_response == "The value is value-of-k."
    assert [c.kwargs.get("tool_choice") for c in model.calls] == ["lookup", None]
    assert all(c.tools == ("add", "lookup", "explode") for c in model.calls)
    assert [e.forced_tool_choice for e in recorder.of("llm_end")] == ["lookup", None]
    states = [state for state, _ in resolver.seen]
    assert [s["iteration_index"] for s in states] == [0, 1]
    assert [s["forced_tool_choice"] for s in states] == [None, "lookup"]
    assert {s["run_id"] for s in states} == {"r"}
    assert {s["streaming"] for s in states} == {path == "stream"}
    assert [n for _, n in resolver.seen] == [1, 3]  # query; query, call, result


async def test_resolver_state_marks_where_the_run_begins_in_a_conversation() -> None:
    resolver = ForceLookupUntilAnswered()
    model = ScriptedChatModel(script() + script())
    agent = ReactAgent(model, TOOLS, tool_choice_resolver=resolver)
    history: list[Any] = []
    await agent.run("what is k?", history=history)
    await agent.run("and again?", history=history)
    # The second run forces again: the earlier lookup result is history, not this run's work.
    assert [c.kwargs.get("tool_choice") for c in model.calls] == ["lookup", None] * 2
    assert [s["run_start"] for s, _ in resolver.seen] == [0, 0, 4, 4]


async def test_forced_choice_reaches_the_openai_wire_and_is_released() -> None:
    def completion(message: dict[str, Any], finish: str) -> WireResponse:
        return WireResponse(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4o-mini",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
            }
        )

    tool_call = {
        "id": "call_a",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"key": "k"}'},
    }
    with serve(
        completion({"role": "assistant", "content": None, "tool_calls": [tool_call]}, "tool_calls"),
        completion({"role": "assistant", "content": "It is value-of-k."}, "stop"),
    ) as server:
        model = ChatOpenAI(
            model="gpt-4o-mini", base_url=server.url + "/v1", api_key="k", max_retries=0
        )
        agent = ReactAgent(model, TOOLS, tool_choice_resolver=ForceLookupUntilAnswered())
        response = await agent.run("what is k?")

    assert response.final_response == "It is value-of-k."
    first, second = (r.body for r in server.requests)
    assert first["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}
    assert "tool_choice" not in second
    assert [t["function"]["name"] for t in second["tools"]] == ["add", "lookup", "explode"]


async def test_raising_resolver_degrades_to_no_forced_choice_and_logs_once_without_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    resolver = Raising()
    recorder = Recorder()
    model = ScriptedChatModel(script() + script())
    agent = ReactAgent(model, TOOLS, tool_choice_resolver=resolver, callbacks=[recorder])
    caplog.set_level(logging.DEBUG)
    with capture_logs() as logs:
        first = await agent.run(f"what is k for {SECRET}?", run_id="r1")
        second = await agent.run("again", run_id="r2")

    assert first.final_response == second.final_response == "The value is value-of-k."
    assert resolver.calls == 4
    assert all("tool_choice" not in c.kwargs for c in model.calls)
    assert [e.forced_tool_choice for e in recorder.of("llm_end")] == [None] * 4
    assert agent.failures.counts() == {RESOLVER_RAISED: 4}
    assert lines_of_kind(RESOLVER_RAISED, logs, caplog.records) == 1
    written = log_text(logs, caplog.records)
    assert "ValueError" in written and "r1" in written
    assert SECRET not in written


@pytest.mark.parametrize("returned", ["not_a_tool", 42])
async def test_resolver_naming_no_tool_of_the_agent_is_ignored(
    returned: Any, caplog: pytest.LogCaptureFixture
) -> None:
    class Bad:
        async def resolve(self, state: dict[str, Any], messages: list[Any]) -> Any:
            return returned

    model = ScriptedChatModel([turn("ok", finish="stop")])
    agent = ReactAgent(model, TOOLS, tool_choice_resolver=Bad())
    caplog.set_level(logging.DEBUG)
    with capture_logs() as logs:
        response = await agent.run("q")
    assert response.final_response == "ok"
    assert "tool_choice" not in model.calls[0].kwargs
    assert agent.failures.counts() == {RESOLVER_UNKNOWN_TOOL: 1}
    assert lines_of_kind(RESOLVER_UNKNOWN_TOOL, logs, caplog.records) == 1
    assert "not_a_tool" not in log_text(logs, caplog.records)


async def test_resolver_is_asked_for_loop_calls_only() -> None:
    resolver = ForceLookupUntilAnswered()
    model = ScriptedChatModel([turn("", finish="stop"), turn("Recovered.")])
    agent = ReactAgent(
        model,
        TOOLS,
        config=FrameworkConfig(synthesize_on_empty_final=True),
        tool_choice_resolver=resolver,
    )
    response = await agent.run("q")
    assert (response.final_response, response.synthesized) == ("Recovered.", True)
    assert len(resolver.seen) == 1
    assert model.calls[0].kwargs.get("tool_choice") == "lookup"
    assert model.calls[1].tools_bound is False and "tool_choice" not in model.calls[1].kwargs


async def test_resolver_is_not_asked_without_tools() -> None:
    resolver = ForceLookupUntilAnswered()
    model = ScriptedChatModel([turn("hi", finish="stop")])
    response = await ReactAgent(model, (), tool_choice_resolver=resolver).run("q")
    assert response.final_response == "hi"
    assert resolver.seen == []


def test_resolver_without_resolve_is_rejected() -> None:
    with pytest.raises(TypeError, match="resolve"):
        ReactAgent(ScriptedChatModel([]), TOOLS, tool_choice_resolver=object())  # type: ignore[arg-type]
