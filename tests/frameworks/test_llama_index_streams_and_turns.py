"""The LlamaIndex adapter on a run's streamed calls, its parsed turns and its model's name.

A streamed model call's span ends when its stream is handed back, before its end event: the
adapter forgets it at that end event, so a long streamed run stays within ``max_spans_per_run``
and every call is recorded. A ReAct agent's tool calls are in its text: the turn the agent
parsed (its ``AgentOutput``) is the run's last turn, so a capped ReAct run bails while still
calling tools. A model LlamaIndex names ``unknown`` has no model name on its spans.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from symfonic_otel import semconv
from symfonic_otel.llama_index import SymfonicLlamaIndex
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.llama_index_support import (
    agent,
    answering,
    instrumented,
    looping,
    priced_agent,
    run,
)

_TOOL_TURNS = 6


def _long_run(workflow: Any) -> None:
    async def go() -> Any:
        return await workflow.run(user_msg="Add 1 and 2", max_iterations=_TOOL_TURNS + 4)

    asyncio.run(go())


@pytest.mark.parametrize("streaming", [True, False])
def test_a_long_run_within_a_small_span_bound_records_every_call(
    telemetry: InMemoryTelemetry, streaming: bool
) -> None:
    adapter = SymfonicLlamaIndex(telemetry.handler(), max_spans_per_run=4).instrument()
    try:
        _long_run(agent("function", answering(_TOOL_TURNS), streaming=streaming)[0])
    finally:
        adapter.uninstrument()
    names = [s.name for s in telemetry.spans()]
    assert names.count("execute_tool add") == _TOOL_TURNS
    assert sum(name.startswith("chat") for name in names) == _TOOL_TURNS + 1
    assert adapter.open_runs == 0


def test_a_capped_react_run_bails_on_the_tool_call_its_agent_parsed(
    telemetry: InMemoryTelemetry,
) -> None:
    with instrumented(telemetry):
        run(agent("react", looping())[0])
    (run_span,) = [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
    (loop_end,) = [e for e in run_span.events if e.name == semconv.EVENT_REACT_LOOP_END]
    attributes = dict(loop_end.attributes or {})
    assert attributes[semconv.REACT_HAS_TOOL_CALLS] is True
    assert attributes[semconv.REACT_TOOL_CALL_COUNT] == 1


def test_a_model_named_unknown_leaves_the_model_name_out(telemetry: InMemoryTelemetry) -> None:
    with instrumented(telemetry):
        run(agent("function", answering())[0])  # LlamaIndex's mock model is named "unknown"
        run(priced_agent(answering()))
    chats = sorted({s.name for s in telemetry.spans() if s.name.startswith("chat")})
    assert chats == ["chat", "chat scripted-1"]
    models = {
        (s.attributes or {}).get(semconv.GEN_AI_REQUEST_MODEL)
        for s in telemetry.spans()
        if s.name.startswith("chat")
    }
    assert "unknown" not in models
