"""The Agents SDK's own span times and error data, read exactly.

The SDK records when each of its spans started and ended (ISO-8601 strings, microseconds); the
processor hands them on, so a model call, a tool, a handoff or a guardrail check is timed by the
SDK rather than by when the processor got to it. The spans are fed directly, with stamps an hour
in the past, so that a time taken from the clock instead (or read in the wrong unit) shows.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from symfonic_otel import semconv
from symfonic_otel.openai_agents import SymfonicTracingProcessor, read
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.openai_agents_support import sdk_span

_T0 = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


def _stamp(ms: int) -> str:
    return (_T0 + timedelta(milliseconds=ms)).isoformat()


def _ns(ms: int) -> int:
    return int(_T0.timestamp()) * 1_000_000_000 + 123_456_000 + ms * 1_000_000


def _timed(kind: str, span_id: str, parent: str | None, start_ms: int, end_ms: int, **data: Any):  # type: ignore[no-untyped-def]
    span = sdk_span(kind, span_id, "trace-t", parent, **data)
    span.started_at, span.ended_at = _stamp(start_ms), _stamp(end_ms)
    return span


def _step(processor: SymfonicTracingProcessor, span: Any) -> None:
    processor.on_span_start(span)
    processor.on_span_end(span)


def _named(telemetry: InMemoryTelemetry, prefix: str) -> ReadableSpan:
    found = [s for s in telemetry.spans() if s.name.startswith(prefix)]
    assert len(found) == 1, [s.name for s in telemetry.spans()]
    return found[0]


def _times(span: ReadableSpan) -> tuple[int | None, int | None]:
    return span.start_time, span.end_time


def test_an_sdk_stamp_is_read_as_epoch_nanoseconds() -> None:
    assert read.time_ns(_stamp(0)) == _ns(0)
    assert read.time_ns(_stamp(1500)) - _ns(0) == 1_500_000_000  # type: ignore[operator]
    assert read.time_ns("2026-01-02T03:04:05") == _ns(0) - 123_456_000  # no zone: UTC


def test_each_step_is_timed_by_the_sdk_span_it_came_from(telemetry: InMemoryTelemetry) -> None:
    processor = SymfonicTracingProcessor(handler=telemetry.handler())
    task = _timed("task", "task", None, 0, 100)
    agent = _timed("agent", "agent", "task", 1, 99, name="helper")
    processor.on_span_start(task)
    processor.on_span_start(agent)
    message = {"role": "assistant", "content": "ok", "tool_calls": None}
    _step(processor, _timed("generation", "gen", "agent", 10, 20, model="m", output=[message]))
    tool = _timed("function", "fn", "agent", 30, 45, name="lookup", input="{}", output="r")
    _step(processor, tool)
    _step(processor, _timed("handoff", "ho", "agent", 50, 52, from_agent="helper", to_agent="b"))
    _step(processor, _timed("guardrail", "gr", "agent", 60, 63, name="g", triggered=False))
    processor.on_span_end(agent)
    processor.on_span_end(task)
    assert _times(_named(telemetry, "chat")) == (_ns(10), _ns(20))
    assert _times(_named(telemetry, "execute_tool lookup")) == (_ns(30), _ns(45))
    assert _times(_named(telemetry, semconv.SPAN_HANDOFF)) == (_ns(50), _ns(52))
    assert _times(_named(telemetry, semconv.SPAN_GUARDRAIL)) == (_ns(60), _ns(63))
    assert _named(telemetry, "invoke_agent").start_time == _ns(0)
    assert processor.open_runs == 0 and processor.internal_failures() == {}


def test_an_error_naming_both_the_turn_budget_and_a_guardrail_is_the_turn_budget() -> None:
    assert read.run_error({"message": "x", "data": {"guardrail": "g", "max_turns": 3}}) == (
        "max_turns"
    )
    assert read.run_error({"message": "x", "data": {"guardrail": "g"}}) == "guardrail"
    assert read.run_error({"message": "x", "data": None}) == "error"


def test_a_response_cut_short_reports_its_incomplete_reason_as_the_finish() -> None:
    response = SimpleNamespace(
        output=[{"type": "message", "content": [{"type": "output_text", "text": "par"}]}],
        incomplete_details=SimpleNamespace(reason="max_output_tokens"),
    )
    shape = read.output_shape(None, response)
    assert shape is not None and shape.finish_reason == "max_output_tokens"
    response.incomplete_details = None
    shape = read.output_shape(None, response)
    assert shape is not None and shape.finish_reason == "stop"


def test_a_failed_model_call_reports_no_finish_reason(telemetry: InMemoryTelemetry) -> None:
    processor = SymfonicTracingProcessor(handler=telemetry.handler())
    processor.on_span_start(sdk_span("task", "task", "trace-t", None))
    processor.on_span_start(sdk_span("agent", "agent", "trace-t", "task", name="helper"))
    message = {"role": "assistant", "content": "partial", "tool_calls": None}
    failed = sdk_span("generation", "gen", "trace-t", "agent", model="m", output=[message])
    failed.error = {"message": "rate limited", "data": None}
    _step(processor, failed)
    processor.on_span_end(sdk_span("agent", "agent", "trace-t", "task"))
    processor.on_span_end(sdk_span("task", "task", "trace-t", None))
    chat = _named(telemetry, "chat")
    assert semconv.GEN_AI_RESPONSE_FINISH_REASONS not in (chat.attributes or {})
    assert (chat.attributes or {})[semconv.ERROR_TYPE] == semconv.OTHER_VALUE


def test_a_run_failing_twice_names_the_first_exception_raised(
    telemetry: InMemoryTelemetry,
) -> None:
    """The agent span ends inside the first exception's unwinding; the task span's end,
    later, inside another's: the run's ``error.type`` is the first one."""
    processor = SymfonicTracingProcessor(handler=telemetry.handler())
    processor.on_span_start(sdk_span("task", "task", "trace-t", None))
    processor.on_span_start(sdk_span("agent", "agent", "trace-t", "task", name="helper"))
    boom = {"message": "boom", "data": None}
    for span_id, parent, raised in (("agent", "task", KeyError), ("task", None, ValueError)):
        try:
            raise raised("x")
        except Exception:
            processor.on_span_end(
                sdk_span("agent" if parent else "task", span_id, "trace-t", parent, error=boom)
            )
    run = _named(telemetry, "invoke_agent helper")
    assert (run.attributes or {})[semconv.ERROR_TYPE] == "KeyError"


def test_a_conversation_id_is_forgotten_when_its_trace_ends(
    telemetry: InMemoryTelemetry,
) -> None:
    processor = SymfonicTracingProcessor(handler=telemetry.handler())
    trace = SimpleNamespace(trace_id="trace-t", group_id="conv-1")
    processor.on_trace_start(trace)  # type: ignore[arg-type]
    processor.on_trace_end(trace)  # type: ignore[arg-type]
    processor.on_span_start(sdk_span("task", "task", "trace-t", None))
    processor.on_span_start(sdk_span("agent", "agent", "trace-t", "task", name="helper"))
    processor.on_span_end(sdk_span("agent", "agent", "trace-t", "task"))
    processor.on_span_end(sdk_span("task", "task", "trace-t", None))
    run = _named(telemetry, "invoke_agent helper")
    assert semconv.GEN_AI_CONVERSATION_ID not in (run.attributes or {})


def test_a_run_whose_last_model_call_failed_is_an_error_though_no_span_above_says_so(
    telemetry: InMemoryTelemetry,
) -> None:
    """The SDK reported the failure on the generation only: the run did not answer."""
    processor = SymfonicTracingProcessor(handler=telemetry.handler())
    processor.on_span_start(sdk_span("task", "task", "trace-t", None))
    processor.on_span_start(sdk_span("agent", "agent", "trace-t", "task", name="helper"))
    failed = sdk_span("generation", "gen", "trace-t", "agent", model="m", output=[])
    failed.error = {"message": "rate limited", "data": None}
    _step(processor, failed)
    processor.on_span_end(sdk_span("agent", "agent", "trace-t", "task"))
    processor.on_span_end(sdk_span("task", "task", "trace-t", None))
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.RUN_OUTCOME: "error"}) == 1
    run = _named(telemetry, "invoke_agent")
    assert (run.attributes or {})[semconv.ERROR_TYPE] == semconv.OTHER_VALUE
