"""What the Claude Agent SDK recorder reads from each message of the stream, fed the SDK's own
message objects (no CLI): which message's usage and text, which tool use id pairs a tool's end
with its start, the answer a run ends with when its result gives one or none, how a capped
result then a caller that stops reading ends, and when the first model call starts.
"""

from __future__ import annotations

import itertools
import time
from types import SimpleNamespace

import pytest
from claude_agent_sdk import TextBlock
from opentelemetry.trace import StatusCode

from symfonic_otel import semconv
from symfonic_otel.claude_agent_sdk import recorder as recorder_module
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.claude_stream_support import (
    CHAT,
    RUN,
    Hook,
    ran,
    record,
    result,
    said,
    tool_use,
)

RUNS = semconv.AGENT_RUNS.name
USAGE = {"input_tokens": 11, "output_tokens": 3}


def _chats(telemetry: InMemoryTelemetry) -> list[dict[str, object]]:
    spans = sorted(
        (s for s in telemetry.spans() if s.name == CHAT), key=lambda s: s.start_time or 0
    )
    return [dict(s.attributes or {}) for s in spans]


def test_a_model_responses_input_and_output_tokens_are_its_own(
    telemetry: InMemoryTelemetry,
) -> None:
    record(
        telemetry,
        [
            said("m1", TextBlock(text="Let me look.")),
            said("m1", tool_use("t1"), usage={"input_tokens": 20, "output_tokens": 7}),
            *ran("t1"),
            said("m2", TextBlock(text="It is sunny."), usage=USAGE),
            result(result="It is sunny."),
        ],
    )
    first, second = _chats(telemetry)
    assert first[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 20
    assert first[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 7
    assert second[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 11
    assert second[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 3


def test_every_text_block_of_a_response_is_its_captured_output(
    telemetry: InMemoryTelemetry,
) -> None:
    """Blocks as messages of their own and several blocks in one message: all of them."""
    record(
        telemetry,
        [
            said("m1", TextBlock(text="Let me look."), TextBlock(text="One moment.")),
            said("m1", TextBlock(text="Checking."), tool_use("t1")),
            *ran("t1"),
            said("m2", TextBlock(text="It is sunny."), usage=USAGE),
            result(result="It is sunny."),
        ],
        capture_content=True,
    )
    first, _ = _chats(telemetry)
    output = str(first[semconv.GEN_AI_OUTPUT_MESSAGES])
    for text in ("Let me look.", "One moment.", "Checking."):
        assert text in output


def test_the_captured_prompt_and_tool_arguments_and_result_are_recorded(
    telemetry: InMemoryTelemetry,
) -> None:
    record(
        telemetry,
        [
            said("m1", tool_use("t1", q="weather")),
            *ran("t1", response="sunny today", q="weather"),
            said("m2", TextBlock(text="It is sunny."), usage=USAGE),
            result(result="It is sunny."),
        ],
        prompt="What is the weather?",
        capture_content=True,
    )
    run = telemetry.span(RUN).attributes or {}
    assert "What is the weather?" in str(run[semconv.GEN_AI_INPUT_MESSAGES])
    tool = telemetry.span("execute_tool lookup").attributes or {}
    assert "weather" in str(tool[semconv.GEN_AI_TOOL_CALL_ARGUMENTS])
    assert "sunny today" in str(tool[semconv.GEN_AI_TOOL_CALL_RESULT])


def test_overlapping_tools_end_by_their_own_tool_use_id(telemetry: InMemoryTelemetry) -> None:
    """Two calls of the same tool run at once; the second fails and ends first."""
    record(
        telemetry,
        [
            said("m1", tool_use("t1"), tool_use("t2")),
            Hook("PreToolUse", "t1"),
            Hook("PreToolUse", "t2"),
            Hook("PostToolUseFailure", "t2", {"error": "KeyError: 'x'"}),
            Hook("PostToolUse", "t1", {"tool_response": "sunny"}),
            said("m2", TextBlock(text="One of them failed.")),
            result(result="One of them failed."),
        ],
    )
    tools = {
        (s.attributes or {})[semconv.GEN_AI_TOOL_CALL_ID]: s
        for s in telemetry.spans()
        if s.name == "execute_tool lookup"
    }
    assert sorted(tools) == ["t1", "t2"]
    assert tools["t1"].status.status_code is StatusCode.UNSET
    assert tools["t2"].status.status_code is StatusCode.ERROR
    assert (tools["t2"].attributes or {})[semconv.ERROR_TYPE] == "ToolError"


def test_a_tool_end_and_a_result_delivered_twice_count_once(
    telemetry: InMemoryTelemetry,
) -> None:
    recorder = record(
        telemetry,
        [
            said("m1", tool_use("t1")),
            *ran("t1"),
            Hook("PostToolUse", "t1", {"tool_response": "sunny"}),
            said("m2", TextBlock(text="It is sunny.")),
            result(result="It is sunny."),
            result(result="It is sunny."),
        ],
    )
    assert [s.name for s in telemetry.spans()].count("execute_tool lookup") == 1
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 1
    assert (telemetry.span(RUN).attributes or {})[semconv.RUN_TOOL_CALLS] == 1
    assert recorder.open_runs == 0


def test_a_capped_result_that_carries_text_is_an_answered_bail(
    telemetry: InMemoryTelemetry,
) -> None:
    capped = result("error_max_turns", is_error=True, result="Partly sunny, I think.")
    record(telemetry, [said("m1", tool_use("t1")), *ran("t1"), capped])
    run = telemetry.span(RUN).attributes or {}
    assert run[semconv.RUN_STOP_REASON] == "recursion_limit"
    assert run[semconv.RESPONSE_EMPTY] is False


@pytest.mark.parametrize(("text", "empty"), [("It is sunny.", False), ("", True)])
def test_a_stream_ending_without_a_result_answers_with_its_last_models_text(
    telemetry: InMemoryTelemetry, text: str, empty: bool
) -> None:
    record(telemetry, [said("m1", TextBlock(text=text))])
    run = telemetry.span(RUN).attributes or {}
    assert run[semconv.RUN_OUTCOME] == "completed"
    assert run[semconv.RESPONSE_EMPTY] is empty


def test_a_capped_result_then_a_caller_that_stops_reading_is_a_completed_bail(
    telemetry: InMemoryTelemetry,
) -> None:
    """The caller leaving the stream is no error: the capped result decides the run."""
    capped = result("error_max_turns", is_error=True)
    record(
        telemetry,
        [said("m1", tool_use("t1")), *ran("t1"), capped, said("m9", TextBlock(text="late"))],
        stop_after=2,
    )
    run = telemetry.span(RUN).attributes or {}
    assert run[semconv.RUN_OUTCOME] == "completed"
    assert run[semconv.RUN_STOP_REASON] == "recursion_limit"
    assert semconv.ERROR_TYPE not in run


def test_an_error_result_then_a_caller_that_stops_reading_keeps_the_results_reason(
    telemetry: InMemoryTelemetry,
) -> None:
    error = result("error_during_execution", is_error=True, terminal_reason="prompt_too_long")
    record(telemetry, [error, said("m9", TextBlock(text="late"))], stop_after=1)
    run = telemetry.span(RUN).attributes or {}
    assert run[semconv.RUN_OUTCOME] == "error"
    assert run[semconv.ERROR_TYPE] == "prompt_too_long"


def test_the_first_model_call_starts_when_the_run_starts(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clock that steps one millisecond on every read: the run's start is read, then the
    first response's arrival, so the first call lasts exactly one step."""
    step = 1_000_000
    ticks = itertools.count(time.time_ns() - 10**9, step)
    monkeypatch.setattr(recorder_module, "time", SimpleNamespace(time_ns=lambda: next(ticks)))
    record(telemetry, [said("m1", TextBlock(text="It is sunny.")), result(result="It is sunny.")])
    (chat,) = [s for s in telemetry.spans() if s.name == CHAT]
    assert chat.start_time is not None and chat.end_time is not None
    assert chat.end_time - chat.start_time == step


def test_a_response_sent_in_several_blocks_ends_at_its_last_block(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clock that steps one millisecond on every read: the run's start, then one read per
    block of the response, so a call that ends at its last block lasts three steps."""
    step = 1_000_000
    ticks = itertools.count(time.time_ns() - 10**9, step)
    monkeypatch.setattr(recorder_module, "time", SimpleNamespace(time_ns=lambda: next(ticks)))
    blocks = [said("m1", TextBlock(text=part)) for part in ("It ", "is ", "sunny.")]
    record(telemetry, [*blocks, result(result="It is sunny.")])
    (chat,) = [s for s in telemetry.spans() if s.name == CHAT]
    assert chat.start_time is not None and chat.end_time is not None
    assert chat.end_time - chat.start_time == 3 * step
