"""The reference loop emits what a Symfonic agent emits: every contract field, with its type.

Its events and their Symfonic-shaped copies (``event_scripts`` mirrors: the contract's fields
only, step events naming no run) must give the same trace through the core handler.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from pydantic import BaseModel

from symfonic_otel.agent import FrameworkConfig, ReactAgent, StreamFinal
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import symfonic_events as sym
from tests.support.agent_support import TOOLS, FullRecorder, call, turn

RUN = "invoke_agent symfonic"


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _dropped(telemetry: InMemoryTelemetry) -> float:
    return telemetry.value("symfonic.telemetry.dropped_events")


# --- the reference loop emits Symfonic's events ----------------------------------------------

# Recorded kind -> the Symfonic shape it must carry (every contract field, under its name).
SHAPES: dict[str, type] = {
    "agent_start": sym.AgentStart,
    "agent_end": sym.AgentEnd,
    "llm_start": sym.LLMStart,
    "llm_pre_call": sym.LLMPreCall,
    "llm_end": sym.LLMEnd,
    "react_loop_end": sym.ReactLoopEnd,
    "node_start": sym.NodeStart,
    "node_end": sym.NodeEnd,
    "node_error": sym.NodeError,
    "tool_call_start": sym.ToolCallStart,
    "tool_result": sym.ToolResult,
    "text_delta": sym.TextDelta,
}


class PreCallRecorder(FullRecorder):
    def on_llm_pre_call(self, event: Any) -> None:
        self.events.append(("llm_pre_call", event))


def _fields(shape: type) -> list[str]:
    if dataclasses.is_dataclass(shape):
        return [f.name for f in dataclasses.fields(shape)]
    assert issubclass(shape, BaseModel)
    return list(shape.model_fields)


def _as_symfonic(kind: str, event: Any) -> Any:
    """The loop's event rebuilt as Symfonic's own: its fields only, no extensions."""
    shape = SHAPES[kind]
    values = {name: getattr(event, name) for name in _fields(shape)}
    return shape(**values)


def _loop_model() -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            turn(
                "Let me compute.",
                call("add", {"a": 1, "b": 2}, "c1"),
                call("explode", {"reason": "x"}, "c2"),
                finish="tool_calls",
                usage=(50, 5),
            ),
            turn("", finish="stop", usage=(60, 0)),  # a silent bail
            turn("The sum is 3.", finish="stop", usage=(70, 6)),  # synthesis recovers
        ]
    )


async def _record(streaming: bool) -> PreCallRecorder:
    recorder = PreCallRecorder()
    agent = ReactAgent(
        _loop_model(),
        TOOLS,
        config=FrameworkConfig(synthesize_on_empty_final=True),
        callbacks=[recorder],
    )
    if streaming:
        items = [item async for item in agent.stream("1+2?", run_id="loop-run")]
        assert isinstance(items[-1], StreamFinal)
    else:
        await agent.run("1+2?", run_id="loop-run")
    return recorder


@pytest.mark.parametrize("streaming", [False, True])
async def test_the_loop_emits_every_contract_field_with_its_type(streaming: bool) -> None:
    recorder = await _record(streaming)
    kinds = set(recorder.kinds())
    assert {"agent_start", "agent_end", "llm_start", "llm_pre_call", "llm_end"} <= kinds
    assert {"node_start", "node_end", "tool_call_start", "tool_result", "react_loop_end"} <= kinds
    if streaming:
        assert "text_delta" in kinds
    for kind, event in recorder.events:
        for name in _fields(SHAPES[kind]):
            assert hasattr(event, name), f"{kind} lacks {name}"
        if hasattr(event, "run_id"):
            assert event.run_id == "loop-run"
        rebuilt = _as_symfonic(kind, event)  # the contract's types accept every value
        if isinstance(rebuilt, BaseModel):
            type(rebuilt).model_validate(rebuilt.model_dump())
    for event in recorder.of("llm_end"):
        assert isinstance(event.started_at_utc, str)
        parsed = datetime.fromisoformat(event.started_at_utc)
        assert parsed.utcoffset() == timedelta(0)  # UTC, as the contract names it
        assert isinstance(event.usage, dict) and isinstance(event.iteration_index, int)
        assert event.outcome in ("completed", "error", "cancelled", "abandoned")
    # The streaming path never synthesises (seed 000): its bail stays one.
    synthesis = [] if streaming else ["react_synthesize_fallback"]
    assert [e.node_name for e in recorder.of("llm_end")] == ["react", "react", *synthesis]
    for event in recorder.of("llm_pre_call"):
        for tool in event.tools:
            assert set(tool) == {"name", "description", "schema"}
        assert isinstance(event.invocation_params, dict)
    phases = Counter(e.phase for e in recorder.of("tool_call_start"))
    assert phases["executing"] == 2
    assert phases["announced"] == (2 if streaming else 0)
    # Symfonic's stream() leaves final_response and node_count None (no final state); the loop
    # keeps its state on both paths, so it reports them: the same verdict, known not guessed.
    (end,) = recorder.of("agent_end")
    assert end.node_count == 3 + (0 if streaming else 1)
    assert end.final_response == ("" if streaming else "The sum is 3.")


def _shape_of(telemetry: InMemoryTelemetry) -> list[tuple[str, str | None, tuple[Any, ...]]]:
    """Each span's name, its parent's name and the attributes both event sources carry."""
    spans = telemetry.spans()
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    keep = (
        "gen_ai.operation.name",
        "gen_ai.request.model",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.usage.input_tokens",
        "symfonic.node.name",
        "symfonic.react.iteration_index",
        "symfonic.run.outcome",
        "symfonic.response.empty",
        "symfonic.react.termination_reason",
        "symfonic.synthesis.recovered",
    )
    out = []
    for span in spans:
        parent = by_id.get(span.parent.span_id) if span.parent is not None else None
        attrs = _attrs(span)
        values = tuple((key, attrs.get(key)) for key in keep)
        out.append((span.name, parent.name if parent is not None else None, values))
    return sorted(out, key=repr)


@pytest.mark.parametrize("streaming", [False, True])
async def test_the_loop_events_and_their_symfonic_copies_give_the_same_trace(
    streaming: bool,
) -> None:
    """The loop's extensions (run ids on step events, stop reasons, error types) are extras:
    Symfonic's shapes of the same run, step events naming no run, make the same tree."""
    recorder = await _record(streaming)
    shapes = []
    for rebuild in (False, True):
        memory = InMemoryTelemetry()
        handler: OTelCallbackHandler = memory.handler(node_spans=True)
        for kind, event in recorder.events:
            await getattr(handler, f"on_{kind}")(_as_symfonic(kind, event) if rebuild else event)
        assert handler.open_runs == 0 and memory.unended_spans == []
        assert _dropped(memory) == 0
        shapes.append(_shape_of(memory))
        memory.shutdown()
    assert shapes[0] == shapes[1]
    names = Counter(name for name, _, _ in shapes[0])
    synthesis = Counter() if streaming else Counter({"invoke_node react_synthesize_fallback": 1})
    assert (
        names
        == Counter(
            {
                RUN: 1,
                "invoke_node react": 2,
                "invoke_node tools": 1,
                "chat scripted-chat": 2 + len(synthesis),
                "execute_tool add": 1,
                "execute_tool explode": 1,
            }
        )
        + synthesis
    )
