"""The smolagents adapter reads each memory step smolagents records exactly.

Real ``ActionStep`` / ``FinalAnswerStep`` records, with timings an hour in the past, are handed
to the adapter's step callbacks the way smolagents hands them: a time taken from the clock
instead of the step's record, a count of zero tokens dropped, or a step's own tool calls read
from the wrong place shows.
"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from smolagents.memory import ActionStep, FinalAnswerStep, ToolCall
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from smolagents.monitoring import Timing, TokenUsage

from symfonic_otel import semconv
from symfonic_otel.smolagents import SymfonicSmolagents
from symfonic_otel.testing.telemetry import InMemoryTelemetry

_T0 = float(int(time.time()) - 3600)  # whole seconds an hour ago: exact in nanoseconds
_S = 1_000_000_000


class _Agent:
    """What the adapter reads of an agent (a real one is held by a weak reference)."""

    name = "helper"
    task = "q"
    model = SimpleNamespace(model_id="m")


def _step(
    number: int,
    start_s: float,
    end_s: float,
    *,
    usage: TokenUsage | None = None,
    tool_calls: list[ToolCall] | None = None,
    requested: list[ChatMessageToolCall] | None = None,
) -> ActionStep:
    message = ChatMessage(role=MessageRole.ASSISTANT, content="thinking", tool_calls=requested)
    return ActionStep(
        step_number=number,
        timing=Timing(start_time=_T0 + start_s, end_time=_T0 + end_s),
        model_output_message=message,
        tool_calls=tool_calls,
        token_usage=usage,
    )


def _play(telemetry: InMemoryTelemetry, *steps: ActionStep) -> SymfonicSmolagents:
    adapter = SymfonicSmolagents(telemetry.handler())
    callbacks = adapter.step_callbacks()
    agent = _Agent()
    for step in steps:
        callbacks[ActionStep](step, agent=agent)
    callbacks[FinalAnswerStep](FinalAnswerStep(output="done"), agent=agent)
    return adapter


def _spans(telemetry: InMemoryTelemetry, prefix: str) -> list[ReadableSpan]:
    return sorted(
        (s for s in telemetry.spans() if s.name.startswith(prefix)),
        key=lambda s: s.start_time or 0,
    )


def _at(seconds: float) -> int:
    return int(_T0) * _S + int(seconds * _S)


def _times(span: ReadableSpan) -> tuple[int, int]:
    """A span's start and end, to the microsecond (a float of epoch seconds holds no more)."""
    assert span.start_time is not None and span.end_time is not None
    return round(span.start_time, -3), round(span.end_time, -3)


def test_a_step_and_its_tool_calls_are_timed_by_the_step_record(
    telemetry: InMemoryTelemetry,
) -> None:
    call = ToolCall(name="lookup", arguments={"q": "x"}, id="c1")
    adapter = _play(
        telemetry,
        _step(1, 0.5, 2.0, usage=TokenUsage(3, 2), tool_calls=[call]),
        _step(2, 2.5, 3.25, usage=TokenUsage(4, 1)),
    )
    chats = _spans(telemetry, "chat")
    assert [_times(s) for s in chats] == [
        (_at(0.5), _at(2.0)),
        (_at(2.5), _at(3.25)),
    ]
    (tool,) = _spans(telemetry, "execute_tool")
    assert _times(tool) == (_at(0.5), _at(2.0))
    (run,) = _spans(telemetry, "invoke_agent")
    assert _times(run)[0] == _at(0.5)
    assert adapter.open_runs == 0


def test_a_step_reporting_zero_output_tokens_records_zero(telemetry: InMemoryTelemetry) -> None:
    _play(telemetry, _step(1, 0.0, 1.0, usage=TokenUsage(7, 0)))
    (chat,) = _spans(telemetry, "chat")
    attributes = chat.attributes or {}
    assert attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 7
    assert attributes[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 0


def test_a_model_turn_without_usage_is_no_failed_call(telemetry: InMemoryTelemetry) -> None:
    """Only the forced final-answer step without usage is a failed call; a model that reports
    no usage answered all the same."""
    _play(telemetry, _step(1, 0.0, 1.0, usage=None))
    (chat,) = _spans(telemetry, "chat")
    assert semconv.ERROR_TYPE not in (chat.attributes or {})


def test_a_step_seen_again_with_its_own_number_stays_in_the_same_run(
    telemetry: InMemoryTelemetry,
) -> None:
    adapter = _play(
        telemetry,
        _step(1, 0.0, 1.0, usage=TokenUsage(1, 1)),
        _step(2, 1.0, 2.0, usage=TokenUsage(1, 1)),
        _step(2, 2.0, 3.0, usage=TokenUsage(1, 1)),
    )
    assert len(_spans(telemetry, "invoke_agent")) == 1
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.RUN_OUTCOME: "abandoned"}) == 0
    assert adapter.open_runs == 0


def test_a_step_that_succeeded_takes_its_tool_calls_from_the_step_not_the_model_message(
    telemetry: InMemoryTelemetry,
) -> None:
    """A successful step with no ``tool_calls`` ran none (a code agent's step, say), whatever
    its model message asked for: only a failed step's calls are read from the message."""
    requested = [
        ChatMessageToolCall(
            function=ChatMessageToolCallFunction(arguments={}, name="lookup"),
            id="c1",
            type="function",
        )
    ]
    _play(telemetry, _step(1, 0.0, 1.0, usage=TokenUsage(1, 1), requested=requested))
    assert _spans(telemetry, "execute_tool") == []


def _raised_in_model(telemetry: InMemoryTelemetry, error: BaseException) -> SymfonicSmolagents:
    """A step whose model call raised ``error``, handed over as smolagents does: while the
    exception is on its way out (neither a model output nor an error in the record)."""
    adapter = SymfonicSmolagents(telemetry.handler())
    step = ActionStep(step_number=1, timing=Timing(start_time=_T0 + 0.5, end_time=_T0 + 2.0))
    try:
        raise error
    except BaseException:
        adapter.step_callbacks()[ActionStep](step, agent=_Agent())
    return adapter


def test_a_model_call_that_raised_is_timed_by_its_step_and_names_the_error(
    telemetry: InMemoryTelemetry,
) -> None:
    adapter = _raised_in_model(telemetry, ConnectionError("model down"))
    (chat,) = _spans(telemetry, "chat")
    assert _times(chat) == (_at(0.5), _at(2.0))
    assert (chat.attributes or {})[semconv.ERROR_TYPE] == "ConnectionError"
    where = {semconv.RUN_OUTCOME: "error"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    assert adapter.open_runs == 0


@pytest.mark.parametrize("error", [KeyboardInterrupt, asyncio.CancelledError, GeneratorExit])
def test_a_run_left_in_its_model_call_ends_cancelled_whatever_left_it(
    telemetry: InMemoryTelemetry, error: type[BaseException]
) -> None:
    """Ctrl-C, a cancelled task, or a stream its caller stopped reading: no error."""
    adapter = _raised_in_model(telemetry, error())
    where = {semconv.RUN_OUTCOME: "cancelled"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    assert adapter.open_runs == 0
