"""Symfonic's step events through the core handler: tools, nodes, time to first chunk, pauses.

The events are hand-built pydantic models and plain objects, as Symfonic's own are (its step
events are pydantic models), never this package's dataclasses: the handler must read them
duck-typed.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel

from symfonic_otel import semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.call_points import assert_react_call_point
from tests.support.recorded import span_attrs


class AgentStart(BaseModel):
    query: str
    run_id: str


class AgentEnd(BaseModel):
    run_id: str
    final_response: str | None
    duration_ms: float
    node_count: int | None
    outcome: str = "completed"


class LLMStart(BaseModel):
    model: str
    messages: list[Any]
    run_id: str = ""
    system_prompt: str = ""
    node_name: str = ""
    turn_index: int = 0


class LLMEnd(BaseModel):
    model: str
    output: str
    usage: dict[str, Any]
    run_id: str = ""
    node_name: str = ""
    duration_ms: float = 0.0
    started_at_utc: str = ""


class TextDelta(BaseModel):
    text: str
    run_id: str = ""


class ToolCallStart(BaseModel):
    tool_call_id: str
    tool_name: str
    phase: str
    run_id: str
    arguments: dict[str, Any] = {}


class ToolResult(BaseModel):
    tool_call_id: str
    tool_name: str
    result: Any = None
    is_error: bool = False
    run_id: str = ""


class NodeStart(BaseModel):
    node_name: str
    run_id: str


class NodeEnd(BaseModel):
    node_name: str
    run_id: str
    duration_ms: float


class NodeError(BaseModel):
    node_name: str
    run_id: str
    error: str
    error_type: str


class Interrupt(BaseModel):
    """Symfonic's fields exactly (seed 003): no run id."""

    name: str
    pause_token: str
    payload: str
    expires_at: datetime
    interrupt_id: str


class AskUser(BaseModel):
    question: str
    run_id: str


class ReactLoopEnd(BaseModel):
    run_id: str
    iteration_index: int
    content_type: str
    has_tool_calls: bool
    tool_call_count: int
    termination_reason: str


SECRET_ARGS = {"query": "account 4242 balance"}
SECRET_RESULT = "balance is 1,000,000"


def _dropped(telemetry: InMemoryTelemetry, reason: str | None = None) -> float:
    where = {"symfonic.telemetry.drop_reason": reason} if reason else None
    return telemetry.value("symfonic.telemetry.dropped_events", where)


async def _tool_run(handler: Any, run_id: str = "r1", *, failed: bool = False) -> None:
    await handler.on_agent_start(AgentStart(query="q", run_id=run_id))
    # The model announces the call (its own id space), then the runtime executes it.
    await handler.on_tool_call_start(
        ToolCallStart(tool_call_id="call_abc", tool_name="search", phase="announced", run_id=run_id)
    )
    await handler.on_tool_call_start(
        ToolCallStart(
            tool_call_id="run-7",
            tool_name="search",
            phase="executing",
            run_id=run_id,
            arguments=SECRET_ARGS,
        )
    )
    await handler.on_tool_result(
        ToolResult(
            tool_call_id="run-7",
            tool_name="search",
            result=SECRET_RESULT,
            is_error=failed,
            run_id=run_id,
        )
    )
    await handler.on_agent_end(
        AgentEnd(run_id=run_id, final_response="ok", duration_ms=5.0, node_count=2)
    )


async def test_executing_phase_becomes_one_tool_span_under_the_run(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    await _tool_run(handler)
    tools = [s for s in telemetry.spans() if s.name.startswith("execute_tool")]
    assert [s.name for s in tools] == ["execute_tool search"]  # the announced phase: no span
    tool, run = tools[0], telemetry.span("invoke_agent symfonic")
    assert tool.kind is SpanKind.INTERNAL
    assert tool.parent is not None and tool.parent.span_id == run.context.span_id
    assert span_attrs(tool) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.id": "run-7",
        "tenant.id": "unknown",
        "symfonic.run.id": "r1",
    }
    assert tool.status.status_code is StatusCode.UNSET
    ((attrs, point),) = telemetry.points("gen_ai.execute_tool.duration")
    assert attrs == {
        "gen_ai.tool.name": "search",
        "gen_ai.agent.name": "symfonic",
    }
    assert isinstance(point, HistogramDataPoint) and point.count == 1
    assert tool.end_time is not None and tool.start_time is not None
    assert point.sum == pytest.approx((tool.end_time - tool.start_time) / 1e9)
    assert list(point.explicit_bounds) == list(semconv.GEN_AI_DURATION_BUCKETS)
    assert _dropped(telemetry) == 0


async def test_tool_arguments_and_results_only_with_capture(telemetry: InMemoryTelemetry) -> None:
    await _tool_run(telemetry.handler(capture_content=False), "private")
    await _tool_run(telemetry.handler(capture_content=True), "captured")
    by_run = {
        span_attrs(s)["symfonic.run.id"]: s for s in telemetry.spans() if s.name.startswith("exe")
    }
    private = span_attrs(by_run["private"])
    assert "gen_ai.tool.call.arguments" not in private
    assert "gen_ai.tool.call.result" not in private
    assert SECRET_RESULT not in repr(private) and "4242" not in repr(private)
    captured = span_attrs(by_run["captured"])
    assert captured["gen_ai.tool.call.arguments"] == '{"query": "account 4242 balance"}'
    assert captured["gen_ai.tool.call.result"] == SECRET_RESULT
    assert semconv.NODE_ERROR_MESSAGE not in captured  # it succeeded: no error message


async def test_failed_tool_result_sets_error_status(telemetry: InMemoryTelemetry) -> None:
    await _tool_run(telemetry.handler(), failed=True)
    tool = telemetry.span("execute_tool search")
    assert tool.status.status_code is StatusCode.ERROR
    assert span_attrs(tool)["error.type"] == "_OTHER"
    ((attrs, _),) = telemetry.points("gen_ai.execute_tool.duration")
    assert attrs["error.type"] == "_OTHER"


async def test_tool_result_with_error_type_and_other_field_names(
    telemetry: InMemoryTelemetry,
) -> None:
    """Another framework's shapes: ``name`` / ``call_id`` / ``status`` / ``output``."""
    handler = telemetry.handler(capture_content=True)
    handler.agent_start(SimpleNamespace(query="q", run_id="r"))
    handler.tool_call_start(SimpleNamespace(call_id="c9", name="fetch", run_id="r", args=[1, 2]))
    handler.tool_result(
        SimpleNamespace(
            call_id="c9",
            name="fetch",
            status="error",
            output={"code": 503},
            error_type="TimeoutError",
            run_id="r",
        )
    )
    handler.agent_end(SimpleNamespace(run_id="r", final_response="x", duration_ms=1.0))
    tool = telemetry.span("execute_tool fetch")
    assert span_attrs(tool)["gen_ai.tool.call.id"] == "c9"
    assert span_attrs(tool)["error.type"] == "TimeoutError"
    assert span_attrs(tool)["gen_ai.tool.call.arguments"] == "[1, 2]"
    assert span_attrs(tool)["gen_ai.tool.call.result"] == '{"code": 503}'
    assert tool.status.status_code is StatusCode.ERROR


async def test_unmatched_and_orphan_tool_events_are_counted(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    await handler.on_tool_call_start(
        ToolCallStart(tool_call_id="x", tool_name="t", phase="executing", run_id="nope")
    )
    await handler.on_agent_start(AgentStart(query="q", run_id="r"))
    await handler.on_tool_result(ToolResult(tool_call_id="never", tool_name="t", run_id="r"))
    # A tool still running when its run ends: ended with the run, marked unfinished.
    await handler.on_tool_call_start(
        ToolCallStart(tool_call_id="slow", tool_name="slow", phase="executing", run_id="r")
    )
    await handler.on_agent_end(
        AgentEnd(run_id="r", final_response="x", duration_ms=1.0, node_count=1)
    )
    assert _dropped(telemetry, "unknown_run") == 1
    assert _dropped(telemetry, "unknown_call") == 1
    slow = telemetry.span("execute_tool slow")
    assert span_attrs(slow)["symfonic.step.unfinished"] is True
    assert telemetry.points("gen_ai.execute_tool.duration") == []  # no result, no duration


async def test_tool_results_without_ids_pair_by_name(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(SimpleNamespace(query="q", run_id="r"))
    for _ in range(2):
        handler.tool_call_start(SimpleNamespace(tool_name="calc", run_id="r"))
    handler.tool_result(SimpleNamespace(tool_name="calc", run_id="r", is_error=True))
    handler.tool_result(SimpleNamespace(tool_name="calc", run_id="r"))
    handler.agent_end(SimpleNamespace(run_id="r", final_response="x", duration_ms=1.0))
    first, second = sorted(
        (s for s in telemetry.spans() if s.name == "execute_tool calc"),
        key=lambda s: s.start_time or 0,
    )
    assert first.status.status_code is StatusCode.ERROR  # the oldest open call gets the first
    assert second.status.status_code is StatusCode.UNSET
    assert "gen_ai.tool.call.id" not in span_attrs(first)
    assert _dropped(telemetry) == 0


async def test_node_spans_are_off_by_default(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    await handler.on_agent_start(AgentStart(query="q", run_id="r"))
    await handler.on_node_start(NodeStart(node_name="react", run_id="r"))
    await handler.on_node_end(NodeEnd(node_name="react", run_id="r", duration_ms=3.0))
    await handler.on_agent_end(
        AgentEnd(run_id="r", final_response="x", duration_ms=1.0, node_count=1)
    )
    assert [s.name for s in telemetry.spans()] == ["invoke_agent symfonic"]
    assert _dropped(telemetry) == 0


async def test_node_spans_nest_model_and_tool_spans(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(node_spans=True)
    await handler.on_agent_start(AgentStart(query="q", run_id="r"))
    await handler.on_node_start(NodeStart(node_name="react", run_id="r"))
    await handler.on_llm_end(
        LLMEnd(model="gpt-4o", output="", usage={}, run_id="r", node_name="react", duration_ms=2.0)
    )
    await handler.on_node_end(NodeEnd(node_name="react", run_id="r", duration_ms=3.0))
    await handler.on_node_start(NodeStart(node_name="tools", run_id="r"))
    await handler.on_tool_call_start(
        ToolCallStart(tool_call_id="t1", tool_name="search", phase="executing", run_id="r")
    )
    await handler.on_tool_result(ToolResult(tool_call_id="t1", tool_name="search", run_id="r"))
    await handler.on_node_error(
        NodeError(node_name="tools", run_id="r", error="user 4242 not found", error_type="KeyError")
    )
    await handler.on_agent_end(
        AgentEnd(run_id="r", final_response="x", duration_ms=1.0, node_count=2)
    )
    run = telemetry.span("invoke_agent symfonic")
    react, tools = telemetry.span("invoke_node react"), telemetry.span("invoke_node tools")
    for node in (react, tools):
        assert node.kind is SpanKind.INTERNAL
        assert node.parent is not None and node.parent.span_id == run.context.span_id
        assert span_attrs(node)["gen_ai.operation.name"] == "invoke_node"
    assert span_attrs(react)["symfonic.node.name"] == "react"
    chat = telemetry.span("chat gpt-4o")
    assert chat.parent is not None and chat.parent.span_id == react.context.span_id
    tool = telemetry.span("execute_tool search")
    assert tool.parent is not None and tool.parent.span_id == tools.context.span_id
    assert tools.status.status_code is StatusCode.ERROR
    assert span_attrs(tools)["error.type"] == "KeyError"
    assert "symfonic.node.error_message" not in span_attrs(tools)  # the message is content
    assert "4242" not in repr(span_attrs(tools))
    assert _dropped(telemetry) == 0


async def test_node_end_without_start_is_rebuilt_from_its_duration(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(node_spans=True, capture_content=True)
    handler.agent_start(AgentStart(query="q", run_id="r"))
    before = time.time_ns()
    handler.node_end(NodeEnd(node_name="late", run_id="r", duration_ms=40.0))
    handler.node_error(NodeError(node_name="boom", run_id="r", error="bad", error_type="E"))
    handler.node_end(SimpleNamespace(node_name="nothing", run_id="r"))  # no start, no duration
    handler.agent_end(AgentEnd(run_id="r", final_response="x", duration_ms=1.0, node_count=1))
    late = telemetry.span("invoke_node late")
    assert late.start_time is not None and late.end_time is not None
    assert late.end_time - late.start_time == 40_000_000
    assert late.end_time >= before
    boom = telemetry.span("invoke_node boom")
    assert boom.status.status_code is StatusCode.ERROR
    assert span_attrs(boom)["symfonic.node.error_message"] == "bad"  # capture on
    assert _dropped(telemetry, "unknown_call") == 1


async def test_streamed_call_records_time_to_first_chunk(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    await handler.on_agent_start(AgentStart(query="q", run_id="r"))
    await handler.on_llm_start(LLMStart(model="gpt-4o", messages=[], run_id="r", node_name="react"))
    time.sleep(0.02)
    await handler.on_text_delta(TextDelta(text="Hel", run_id="r"))
    time.sleep(0.02)
    await handler.on_text_delta(TextDelta(text="lo", run_id="r"))  # only the first one counts
    await handler.on_llm_end(
        LLMEnd(model="gpt-4o", output="Hello", usage={}, run_id="r", node_name="react")
    )
    # A second call of the same node, not streamed: no time to first chunk.
    await handler.on_llm_start(LLMStart(model="gpt-4o", messages=[], run_id="r", node_name="react"))
    await handler.on_llm_end(
        LLMEnd(model="gpt-4o", output="x", usage={}, run_id="r", node_name="react")
    )
    await handler.on_agent_end(
        AgentEnd(run_id="r", final_response="x", duration_ms=1.0, node_count=1)
    )
    streamed, plain = sorted(
        (s for s in telemetry.spans() if s.name == "chat gpt-4o"), key=lambda s: s.start_time or 0
    )
    ttfc = span_attrs(streamed)["gen_ai.response.time_to_first_chunk"]
    # LLMStart gave the span its start (the LLMEnd has no timing of its own); the first delta
    # came 20 ms in, the end 20 ms after that.
    assert streamed.start_time is not None and streamed.end_time is not None
    duration_s = (streamed.end_time - streamed.start_time) / 1e9
    assert 0.02 <= ttfc <= duration_s - 0.02
    assert "gen_ai.response.time_to_first_chunk" not in span_attrs(plain)
    ((attrs, point),) = telemetry.points("gen_ai.client.operation.time_to_first_chunk")
    assert_react_call_point(attrs, point, seconds=ttfc)
    durations = telemetry.points("gen_ai.client.operation.duration")
    assert sum(p.count for _, p in durations if isinstance(p, HistogramDataPoint)) == 2


async def test_ask_user_pause_is_completed_not_a_bail(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    await handler.on_agent_start(AgentStart(query="q", run_id="r"))
    await handler.on_ask_user_question(AskUser(question="Which account?", run_id="r"))
    # The loop then ends without text: the run waits for its user, it did not bail.
    await handler.on_react_loop_end(
        ReactLoopEnd(
            run_id="r",
            iteration_index=0,
            content_type="list",
            has_tool_calls=True,
            tool_call_count=1,
            termination_reason="tool_calls_with_no_text",
        )
    )
    await handler.on_agent_end(
        AgentEnd(run_id="r", final_response="", duration_ms=9.0, node_count=1)
    )
    run = span_attrs(telemetry.span("invoke_agent symfonic"))
    assert run["symfonic.run.outcome"] == "completed"
    assert run["symfonic.run.paused"] is True
    assert run["symfonic.run.pause_kind"] == "ask_user"
    assert "symfonic.response.empty" not in run
    assert "symfonic.react.termination_reason" not in run
    assert "Which account" not in repr(run)
    assert telemetry.value("symfonic.react.silent_bails") == 0
    assert telemetry.points("symfonic.agent.runs") == [
        (
            {
                "tenant.id": "unknown",
                "gen_ai.agent.name": "symfonic",
                "symfonic.run.outcome": "completed",
                "symfonic.run.paused": True,
            },
            1,
        )
    ]
    events = [e.name for e in telemetry.span("invoke_agent symfonic").events]
    assert events == ["symfonic.run.paused", "symfonic.react.loop_end"]


async def test_symfonic_interrupt_without_run_id(telemetry: InMemoryTelemetry) -> None:
    """Symfonic's InterruptEvent names no run: it is the sole open run's, else not guessed."""
    handler = telemetry.handler()
    interrupt = Interrupt(
        name="approval_required",
        pause_token="jwt",
        payload="{}",
        expires_at=datetime(2030, 1, 1, tzinfo=UTC),
        interrupt_id="i-0123456789ab",
    )
    handler.agent_start(AgentStart(query="q", run_id="only"))
    await handler.on_interrupt(interrupt)
    handler.agent_end(AgentEnd(run_id="only", final_response=None, duration_ms=1.0, node_count=1))
    paused = span_attrs(telemetry.span("invoke_agent symfonic"))
    assert paused["symfonic.run.paused"] is True
    assert paused["symfonic.run.pause_kind"] == "interrupt"
    assert paused["symfonic.run.interrupt_name"] == "approval_required"

    handler.agent_start(AgentStart(query="q", run_id="a"))
    handler.agent_start(AgentStart(query="q", run_id="b"))
    await handler.on_interrupt(interrupt)  # two runs open: which one? not guessed, counted
    for run_id in ("a", "b"):
        handler.agent_end(
            AgentEnd(run_id=run_id, final_response="x", duration_ms=1.0, node_count=1)
        )
    assert _dropped(telemetry, "malformed") == 1
    assert all(
        "symfonic.run.paused" not in span_attrs(s)
        for s in telemetry.spans()
        if span_attrs(s).get("symfonic.run.id") in ("a", "b")
    )
