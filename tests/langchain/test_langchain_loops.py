"""Loops through LangChain 1.x ``create_agent`` (a LangGraph graph) and the callback handler.

A scripted model keeps calling one tool with the same arguments; the tool reads the
looping-run count while the graph is still running.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, tool

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.loop_support import all_loop_events, assert_no_text, looping, repeated

SECRET = 737373


def _turn(a: int, call_id: str) -> AIMessage:
    call = {"name": "probe", "args": {"a": a, "b": SECRET}, "id": call_id, "type": "tool_call"}
    return AIMessage(content="", tool_calls=[call])


def _run(
    telemetry: InMemoryTelemetry, turns: list[Any], **options: Any
) -> tuple[list[float], LangChainCallbackHandler]:
    from langchain.agents import create_agent

    seen: list[float] = []

    @tool
    def probe(a: int, b: int) -> int:
        """Add two integers (and note the looping runs counted so far)."""
        seen.append(looping(telemetry))
        return a + b

    tools: list[BaseTool] = [probe]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_agent(ScriptedChatModel(turns), tools)
    handler = LangChainCallbackHandler(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        **options,
    )
    telemetry.track(handler.handler)
    agent.invoke(
        {"messages": [("user", "add")]},
        config={
            "callbacks": [handler],
            "metadata": {"tenant_id": "acme"},
            "recursion_limit": 500,
        },
    )
    return seen, handler


def test_three_identical_calls_loop_while_the_graph_runs(telemetry: InMemoryTelemetry) -> None:
    seen, _ = _run(telemetry, [_turn(1, f"c{i}") for i in range(6)] + ["3"])
    assert seen == [0, 0, 1, 1, 1, 1]
    assert looping(telemetry, semconv.LOOP_REPEATED_TOOL_CALL, tenant__id="acme") == 1
    assert repeated(telemetry, tenant__id="acme") == 5
    (event,) = all_loop_events(telemetry)
    assert event[semconv.GEN_AI_TOOL_NAME] == "probe"
    assert_no_text(telemetry, str(SECRET))


def test_no_loop_below_the_threshold_or_with_other_arguments(
    telemetry: InMemoryTelemetry,
) -> None:
    _run(telemetry, [_turn(1, "c0"), _turn(1, "c1"), "2"])
    _run(telemetry, [_turn(i, f"c{i}") for i in range(4)] + ["done"])
    assert looping(telemetry) == 0


def test_call_budget_and_options(telemetry: InMemoryTelemetry) -> None:
    _run(telemetry, [_turn(i, f"c{i}") for i in range(4)] + ["done"], runaway_calls=5)
    assert looping(telemetry) == 0  # five model calls
    _run(telemetry, [_turn(i, f"c{i}") for i in range(5)] + ["done"], runaway_calls=5)
    assert looping(telemetry, semconv.LOOP_CALL_BUDGET) == 1
    seen, handler = _run(telemetry, [_turn(1, "c0"), _turn(1, "c1"), "2"], loop_threshold=2)
    assert seen == [1, 2]  # the call-budget run above counted one
    assert handler.handler.loop_limits.threshold == 2


def test_bad_options_name_the_argument() -> None:
    with pytest.raises(ValueError, match="loop_threshold"):
        LangChainCallbackHandler(loop_threshold=0)
