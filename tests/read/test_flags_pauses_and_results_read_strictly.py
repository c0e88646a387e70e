"""Event fields read strictly, on the real core handler and OTel SDK.

A boolean field counts only when it is ``True`` itself: a truthy string or int (``"false"``,
``1``) from a duck-typed event is not a flag. An ask-user pause names no interrupt even when its
event carries a ``name``; an interrupt names its own. A tool result that carries both ``result``
and ``content`` is recorded with its ``result``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from opentelemetry.trace import StatusCode

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent, ToolCallStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

RUN_SPAN = "invoke_agent symfonic"
USAGE = {"input_tokens": 10, "output_tokens": 5}


@dataclass
class _LoopEnd:
    has_tool_calls: object
    run_id: str = "r1"
    iteration_index: int = 1
    content_type: str = "NoneType"
    tool_call_count: int = 0
    termination_reason: str = "no_content_no_tool_calls"


@dataclass
class _ToolResult:
    is_error: object
    tool_call_id: str = "c1"
    tool_name: str = "lookup"
    run_id: str = "r1"
    result: object = "ok"


@dataclass
class _Pause:
    name: str
    run_id: str = "r1"
    question: str = "which one?"


@dataclass
class _BothResults:
    result: str
    content: str
    tool_call_id: str = "c1"
    tool_name: str = "lookup"
    run_id: str = "r1"


def _run_event(telemetry: InMemoryTelemetry, event_name: str) -> dict[str, object]:
    """The attributes of the run span's one event called ``event_name``."""
    [event] = [e for e in telemetry.span(RUN_SPAN).events if e.name == event_name]
    return dict(event.attributes or {})


@pytest.mark.parametrize(("raw", "expected"), [(True, True), ("false", False), (1, False)])
def test_a_loop_end_has_tool_calls_only_when_the_flag_is_true_itself(
    telemetry: InMemoryTelemetry, raw: object, expected: bool
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="q", run_id="r1"))
    handler.react_loop_end(_LoopEnd(raw))
    handler.agent_end(AgentEndEvent("r1", "", 1.0, 1))
    attributes = _run_event(telemetry, semconv.EVENT_REACT_LOOP_END)
    assert attributes[semconv.REACT_HAS_TOOL_CALLS] is expected


@pytest.mark.parametrize(("raw", "expected"), [(True, True), ("no", False), (1, False)])
def test_a_priced_call_is_pricing_unknown_only_when_the_flag_is_true_itself(
    telemetry: InMemoryTelemetry, raw: object, expected: bool
) -> None:
    handler = telemetry.handler()
    event = LLMEndEvent("gpt-4o-mini", "", USAGE, pricing_unknown=raw)  # type: ignore[arg-type]
    handler.llm_end(event)
    [span] = [s for s in telemetry.spans() if s.name.startswith("chat")]
    assert (span.attributes or {})[semconv.LLM_PRICING_UNKNOWN] is expected


@pytest.mark.parametrize(("raw", "failed"), [(True, True), ("false", False), (1, False)])
def test_a_tool_result_fails_only_when_is_error_is_true_itself(
    telemetry: InMemoryTelemetry, raw: object, failed: bool
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="q", run_id="r1"))
    handler.tool_call_start(ToolCallStartEvent("c1", "lookup", {}, "executing", run_id="r1"))
    handler.tool_result(_ToolResult(raw))
    handler.agent_end(AgentEndEvent("r1", "a", 1.0, 1))
    span = telemetry.span("execute_tool lookup")
    assert (span.status.status_code is StatusCode.ERROR) is failed
    assert (semconv.ERROR_TYPE in (span.attributes or {})) is failed


def test_an_ask_user_pause_names_no_interrupt_even_when_its_event_has_a_name(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="q", run_id="r1"))
    handler.ask_user_question(_Pause("approve_refund"))
    handler.agent_end(AgentEndEvent("r1", "", 1.0, 1))
    attributes = _run_event(telemetry, semconv.EVENT_RUN_PAUSED)
    assert attributes[semconv.RUN_PAUSE_KIND] == semconv.PAUSE_ASK_USER
    assert semconv.RUN_INTERRUPT_NAME not in attributes


def test_an_interrupt_pause_names_its_interrupt(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="q", run_id="r1"))
    handler.interrupt(_Pause("approve_refund"))
    handler.agent_end(AgentEndEvent("r1", "", 1.0, 1))
    attributes = _run_event(telemetry, semconv.EVENT_RUN_PAUSED)
    assert attributes[semconv.RUN_PAUSE_KIND] == semconv.PAUSE_INTERRUPT
    assert attributes[semconv.RUN_INTERRUPT_NAME] == "approve_refund"


def test_a_tool_result_with_result_and_content_is_recorded_with_its_result(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(capture_content=True)
    handler.agent_start(AgentStartEvent(query="q", run_id="r1"))
    handler.tool_call_start(ToolCallStartEvent("c1", "lookup", {}, "executing", run_id="r1"))
    handler.tool_result(_BothResults(result="the result", content="the content"))
    handler.agent_end(AgentEndEvent("r1", "a", 1.0, 1))
    recorded = (telemetry.span("execute_tool lookup").attributes or {})[
        semconv.GEN_AI_TOOL_CALL_RESULT
    ]
    assert "the result" in str(recorded) and "the content" not in str(recorded)
