"""The Claude Agent SDK recorder, fed the SDK's own message objects and hook inputs directly.

The end-to-end tests run the SDK's bundled CLI (a process: the live lane); these hand
``RecordedSession.record`` a scripted stream of real ``AssistantMessage`` / ``ResultMessage``
objects and call its tool hooks the way the SDK does, so every verdict, the grouping of content
blocks into model responses and the tool spans are checked in the fast lane.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from types import SimpleNamespace

import pytest
from claude_agent_sdk import (
    ResultError,
    TextBlock,
)
from opentelemetry.trace import StatusCode

from symfonic_otel import semconv
from symfonic_otel.claude_agent_sdk import recorder as recorder_module
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import adapter_checks as checks
from tests.support.claude_stream_support import (
    MODEL,
    RUN,
    failed,
    ran,
    record,
    result,
    said,
    tool_use,
)
from tests.support.raising_support import assert_error_run

RUNS = semconv.AGENT_RUNS.name


def test_blocks_sharing_a_message_id_are_one_model_response_and_the_tool_sits_between(
    telemetry: InMemoryTelemetry,
) -> None:
    usage = {"input_tokens": 11, "output_tokens": 3}
    recorder = record(
        telemetry,
        [
            said("m1", TextBlock(text="Let me look.")),
            said("m1", tool_use("t1"), usage=usage, stop_reason="tool_use"),
            *ran("t1"),
            said("sub", TextBlock(text="a sub-agent's turn"), parent="t1"),
            said("m2", TextBlock(text="It is sunny."), usage=usage, stop_reason="end_turn"),
            result(result="It is sunny.", stop_reason="end_turn"),
        ],
    )
    checks.assert_one_healthy_run(telemetry)
    run = telemetry.span(RUN)
    assert (run.attributes or {})[semconv.RUN_STOP_REASON] == "end_turn"
    checks.assert_two_chats_and_the_tool_under(telemetry, run, f"chat {MODEL}", input_tokens=11)
    chats = sorted(
        (s for s in telemetry.spans() if s.name == f"chat {MODEL}"), key=lambda s: s.start_time or 0
    )
    finishes = [(c.attributes or {})[semconv.GEN_AI_RESPONSE_FINISH_REASONS] for c in chats]
    assert finishes == [("tool_use",), ("end_turn",)]
    tool = telemetry.span("execute_tool lookup")
    assert tool.status.status_code is StatusCode.UNSET
    assert recorder.open_runs == 0


def test_a_tool_the_sdk_reports_failed_marks_its_span_and_the_run_completes(
    telemetry: InMemoryTelemetry,
) -> None:
    record(
        telemetry,
        [
            said("m1", tool_use("t1")),
            *failed("t1"),
            said("m2", TextBlock(text="It failed.")),
            result(result="It failed."),
        ],
    )
    tool = telemetry.span("execute_tool lookup")
    assert tool.status.status_code is StatusCode.ERROR
    assert (tool.attributes or {})[semconv.ERROR_TYPE] == "ToolError"
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 1


@pytest.mark.parametrize("subtype", ["error_max_turns", "error_max_budget_usd"])
def test_a_capped_result_and_the_sdks_result_error_is_a_bail_and_an_error_run(
    telemetry: InMemoryTelemetry, subtype: str
) -> None:
    with pytest.raises(ResultError):
        record(
            telemetry,
            [said("m1", tool_use("t1")), *ran("t1"), result(subtype, is_error=True)],
            raises=ResultError("capped"),
        )
    checks.assert_capped_silent_bail(telemetry, "acme", "error")
    assert (telemetry.span(RUN).attributes or {})[semconv.ERROR_TYPE] == "ResultError"


def test_a_capped_result_without_an_exception_is_a_completed_bail(
    telemetry: InMemoryTelemetry,
) -> None:
    record(
        telemetry,
        [said("m1", tool_use("t1")), *ran("t1"), result("error_max_turns", is_error=True)],
    )
    checks.assert_capped_silent_bail(telemetry, "acme", "completed")


@pytest.mark.parametrize("aborted", ["aborted_streaming", "aborted_tools"])
def test_an_interrupted_turn_is_cancelled_even_though_its_result_is_an_error(
    telemetry: InMemoryTelemetry, aborted: str
) -> None:
    """Interrupted while the model streamed, or while its tools ran."""
    record(
        telemetry,
        [
            said("m1", TextBlock(text="Let me")),
            result("error_during_execution", is_error=True, terminal_reason=aborted),
        ],
    )
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "cancelled"}) == 1
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0


@pytest.mark.parametrize(
    ("terminal_reason", "error_type"),
    [(None, "error_during_execution"), ("prompt_too_long", "prompt_too_long")],
)
def test_an_error_result_names_its_terminal_reason_else_its_subtype(
    telemetry: InMemoryTelemetry, terminal_reason: str | None, error_type: str
) -> None:
    error = result("error_during_execution", is_error=True, terminal_reason=terminal_reason)
    record(telemetry, [error])
    assert_error_run(telemetry, "acme", RuntimeError(), RUN, error_type)


def test_a_capped_result_of_an_interrupted_turn_is_still_the_cap(
    telemetry: InMemoryTelemetry,
) -> None:
    capped = result("error_max_turns", is_error=True, terminal_reason="aborted_tools")
    record(telemetry, [said("m1", tool_use("t1")), *ran("t1"), capped])
    checks.assert_capped_silent_bail(telemetry, "acme", "completed")


def test_an_answer_keeps_the_stop_reason_its_result_gives(telemetry: InMemoryTelemetry) -> None:
    record(
        telemetry,
        [said("m1", TextBlock(text="Cut")), result(result="Cut", stop_reason="max_tokens")],
    )
    assert (telemetry.span(RUN).attributes or {})[semconv.RUN_STOP_REASON] == "max_tokens"


def test_a_stream_raising_without_a_result_is_an_error_of_the_exceptions_type(
    telemetry: InMemoryTelemetry,
) -> None:
    with pytest.raises(ConnectionError) as raised:
        record(telemetry, [said("m1", TextBlock(text="Let"))], raises=ConnectionError("cut"))
    assert_error_run(telemetry, "acme", raised.value, RUN)


def test_a_caller_that_stops_reading_cancels_the_run(telemetry: InMemoryTelemetry) -> None:
    recorder = record(
        telemetry,
        [said("m1", TextBlock(text="Let")), said("m2", TextBlock(text="more")), result()],
        stop_after=1,
    )
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "cancelled"}) == 1
    assert recorder.open_runs == 0


def test_an_error_result_then_an_exception_is_an_error_of_the_exceptions_type(
    telemetry: InMemoryTelemetry,
) -> None:
    """The exception that ended the run wins over the reason its error result gave."""
    error = result("error_during_execution", is_error=True, terminal_reason="prompt_too_long")
    with pytest.raises(ConnectionError) as raised:
        record(telemetry, [error], raises=ConnectionError("cut"))
    assert_error_run(telemetry, "acme", raised.value, RUN)


def test_the_model_call_after_a_tool_starts_when_the_tool_ended(
    telemetry: InMemoryTelemetry,
) -> None:
    record(
        telemetry,
        [
            said("m1", tool_use("t1"), stop_reason="tool_use"),
            *ran("t1"),
            said("m2", TextBlock(text="It is sunny."), stop_reason="end_turn"),
            result(result="It is sunny.", stop_reason="end_turn"),
        ],
    )
    tool = telemetry.span("execute_tool lookup")
    first, second = sorted(
        (s for s in telemetry.spans() if s.name == f"chat {MODEL}"), key=lambda s: s.start_time or 0
    )
    assert first.end_time is not None and tool.start_time is not None
    assert tool.end_time is not None and second.start_time is not None
    assert first.end_time <= tool.start_time
    assert second.start_time >= tool.end_time  # the tool's time is not the model's


def test_a_model_call_right_after_another_starts_when_the_first_ended(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two responses with no tool between: the second starts when the first was recorded,
    not at the run's start (a clock that steps on every read makes the order exact)."""
    ticks = itertools.count(time.time_ns() - 10**9, 1_000_000)
    monkeypatch.setattr(recorder_module, "time", SimpleNamespace(time_ns=lambda: next(ticks)))
    record(
        telemetry,
        [
            said("m1", TextBlock(text="Let me think."), stop_reason="end_turn"),
            said("m2", TextBlock(text="It is sunny."), stop_reason="end_turn"),
            result(result="It is sunny.", stop_reason="end_turn"),
        ],
    )
    first, second = sorted(
        (s for s in telemetry.spans() if s.name == f"chat {MODEL}"), key=lambda s: s.end_time or 0
    )
    assert first.end_time is not None and second.start_time is not None
    assert second.start_time >= first.end_time


def test_a_cancelled_stream_ends_the_run_cancelled_not_an_error(
    telemetry: InMemoryTelemetry,
) -> None:
    with pytest.raises(asyncio.CancelledError):
        record(telemetry, [said("m1", TextBlock(text="Let"))], raises=asyncio.CancelledError())
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "cancelled"}) == 1
    assert semconv.ERROR_TYPE not in (telemetry.span(RUN).attributes or {})
