"""The metric emitter's attribute-set cache, fed keys that differ in one field only: each field
keeps its own series."""

from __future__ import annotations

from typing import Any

from symfonic_otel import semconv
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    AskUserQuestionEvent,
    LLMEndEvent,
    ReactLoopEndEvent,
    ToolCallStartEvent,
    ToolResultEvent,
)
from symfonic_otel.testing.telemetry import InMemoryTelemetry

DROPS = "symfonic.telemetry.dropped_events"
REASON = semconv.TELEMETRY_DROP_REASON
USAGE = {"input_tokens": 3, "output_tokens": 2}


def _series(telemetry: InMemoryTelemetry, name: str, *keys: str) -> dict[tuple[Any, ...], float]:
    return {
        tuple(attributes.get(key) for key in keys): (
            value if isinstance(value, int | float) else value.count
        )
        for attributes, value in telemetry.points(name)
    }


# --- the attribute-set cache: keys that differ in one field ----------------------------------


def test_runs_counter_keeps_paused_and_unpaused_runs_apart(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(tenant_id="acme")
    handler.agent_start(AgentStartEvent("q", "streamed"))  # answer unknown: no empty flag
    handler.agent_end(AgentEndEvent("streamed", None, 1.0, 1))
    handler.agent_start(AgentStartEvent("q", "waiting"))
    handler.ask_user_question(AskUserQuestionEvent("Which warehouse?", run_id="waiting"))
    handler.agent_end(AgentEndEvent("waiting", None, 1.0, 1))
    series = _series(telemetry, semconv.AGENT_RUNS.name, semconv.RUN_OUTCOME, semconv.RUN_PAUSED)
    assert series == {("completed", None): 1, ("completed", True): 1}


def test_silent_bails_are_counted_per_termination_reason(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(tenant_id="acme")
    reasons = ["tool_calls_with_no_text", "no_content_no_tool_calls", "tool_calls_with_no_text"]
    for index, reason in enumerate(reasons):
        run_id = f"r{index}"
        handler.agent_start(AgentStartEvent("q", run_id))
        handler.react_loop_end(ReactLoopEndEvent(run_id, 2, "str", False, 0, reason))  # type: ignore[arg-type]
        handler.agent_end(AgentEndEvent(run_id, "", 1.0, 1))
    series = _series(telemetry, semconv.SILENT_BAILS.name, semconv.REACT_TERMINATION_REASON)
    assert series == {("tool_calls_with_no_text",): 2, ("no_content_no_tool_calls",): 1}


def test_drops_of_one_event_kind_are_counted_per_reason(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_end(AgentEndEvent("never-started", "a", 1.0, 1))  # unknown_run
    handler.agent_start(AgentStartEvent("q", "r"))
    handler.agent_end(AgentEndEvent("r", "a", 1.0, 1))
    handler.agent_end(AgentEndEvent("r", "a", 1.0, 1))  # duplicate
    handler.agent_end(AgentEndEvent("", "a", 1.0, 1))  # malformed: no run id
    series = _series(telemetry, DROPS, semconv.TELEMETRY_EVENT, REASON)
    assert series == {
        ("agent_end", "unknown_run"): 1,
        ("agent_end", "duplicate"): 1,
        ("agent_end", "malformed"): 1,
    }


def test_tool_durations_of_one_tool_keep_failures_apart(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    for index, error in enumerate([None, "TimeoutError", None]):
        call_id = f"t{index}"
        handler.tool_call_start(ToolCallStartEvent(call_id, "search", run_id="r"))
        handler.tool_result(
            ToolResultEvent(
                call_id, "search", is_error=error is not None, run_id="r", error_type=error
            )
        )
    handler.agent_end(AgentEndEvent("r", "a", 1.0, 1))
    series = _series(telemetry, semconv.EXECUTE_TOOL_DURATION.name, semconv.ERROR_TYPE)
    assert series == {(None,): 2, ("TimeoutError",): 1}


def test_call_durations_of_one_model_keep_failures_apart(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    for error in (None, "RateLimitError", None):
        handler.llm_end(
            LLMEndEvent(
                "gpt-4o",
                "x",
                USAGE,
                duration_ms=5.0,
                outcome="error" if error else "completed",
                error_type=error,
            ),
            error_type=error,
        )
    series = _series(telemetry, semconv.CLIENT_OPERATION_DURATION.name, semconv.ERROR_TYPE)
    assert series == {(None,): 2, ("RateLimitError",): 1}


def test_cost_series_of_one_model_keep_unknown_pricing_apart(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    for flag in (False, True, False):
        handler.llm_end(LLMEndEvent("gpt-4o", "x", USAGE, pricing_unknown=flag))
    points = telemetry.points(semconv.LLM_COST.name, include_zeros=True)
    assert sorted(a[semconv.LLM_PRICING_UNKNOWN] for a, _ in points) == [False, True]
