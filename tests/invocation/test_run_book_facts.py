"""What each fact an adapter hands the run book becomes, on the real core handler and OTel SDK.

Each fact has a twin it can be confused with: the run's wall-clock start and its monotonic one
(seconds, never milliseconds), the answer text and the answer to show, the loop's last turn and
the forced final answer, a call's own end time and the time it was recorded, a tool's call id
and the key it is kept under. These pin which one each recorded value comes from.
"""

from __future__ import annotations

import time

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint
from opentelemetry.sdk.trace import ReadableSpan

from symfonic_otel import semconv
from symfonic_otel.invocation import RunBook, Turn
from symfonic_otel.invocation.calls import MAX_CALL_STARTS
from symfonic_otel.invocation.tools import MAX_OPEN_TOOLS
from symfonic_otel.invocation.turns import answered, bail_event, shape_bail
from symfonic_otel.testing.telemetry import InMemoryTelemetry

RUN_SPAN = "invoke_agent helper"


def _book(telemetry: InMemoryTelemetry, *, capture: bool = False) -> RunBook:
    return RunBook(telemetry.handler(capture_content=capture), "TestAdapter", 8)


def _run_seconds(telemetry: InMemoryTelemetry) -> float:
    [(_, point)] = telemetry.points(semconv.AGENT_DURATION.name)
    assert isinstance(point, HistogramDataPoint)
    return float(point.sum)


def _attributes(span: ReadableSpan) -> dict[str, object]:
    return dict(span.attributes or {})


def test_a_run_started_at_a_wall_clock_time_lasts_seconds_from_it(
    telemetry: InMemoryTelemetry,
) -> None:
    book = _book(telemetry)
    started = time.time_ns() - 2_000_000_000
    book.start("r1", "helper", started_ns=started)
    book.end("r1", "answered", answer="42")
    assert 1.9 < _run_seconds(telemetry) < 30.0
    assert telemetry.span(RUN_SPAN).start_time == started


def test_a_run_started_without_a_wall_clock_time_lasts_seconds_from_its_monotonic_start(
    telemetry: InMemoryTelemetry,
) -> None:
    book = _book(telemetry)
    run = book.start("r1", "helper")
    assert run is not None
    run.started -= 2.0  # it began two seconds ago by the monotonic clock
    book.end("r1", "answered", answer="42")
    assert 1.9 < _run_seconds(telemetry) < 30.0


def test_the_answer_shown_is_the_final_given_not_the_answer_text(
    telemetry: InMemoryTelemetry,
) -> None:
    book = _book(telemetry, capture=True)
    book.start("r1", "helper")
    book.end("r1", "answered", answer="raw text", final="the structured answer")
    output = str(_attributes(telemetry.span(RUN_SPAN))[semconv.GEN_AI_OUTPUT_MESSAGES])
    assert "the structured answer" in output and "raw text" not in output


def test_a_bail_reports_the_index_of_the_last_loop_call(telemetry: InMemoryTelemetry) -> None:
    book = _book(telemetry)
    run = book.start("r1", "helper")
    assert run is not None
    for _ in range(3):
        book.model_call(run, Turn.of([], 2), model="m-1")
    book.end("r1", "capped")
    [loop_end] = [e for e in telemetry.span(RUN_SPAN).events if e.name == "symfonic.react.loop_end"]
    attributes = dict(loop_end.attributes or {})
    assert attributes[semconv.REACT_ITERATION_INDEX] == 2  # three calls: indexes 0, 1, 2
    assert attributes[semconv.REACT_TOOL_CALL_COUNT] == 2


def test_an_unknown_answer_is_neither_an_answer_nor_a_bail(telemetry: InMemoryTelemetry) -> None:
    book = _book(telemetry)
    run = book.start("r1", "helper")
    assert run is not None
    book.model_call(run, Turn.of([], 1), model="m-1")
    book.end("r1", "answered", answered=None)
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0
    assert semconv.RESPONSE_EMPTY not in _attributes(telemetry.span(RUN_SPAN))


def test_a_model_call_keeps_its_own_times_finish_reason_response_id_and_first_chunk(
    telemetry: InMemoryTelemetry,
) -> None:
    book = _book(telemetry)
    run = book.start("r1", "helper")
    assert run is not None
    ended = time.time_ns() - 1_000_000_000
    started = ended - 3_000_000
    book.model_call(
        run,
        Turn.of(["cut"], 0, "length"),
        model="m-1",
        started_ns=started,
        ended_ns=ended,
        response_id="resp-1",
        first_chunk_s=0.25,
    )
    book.model_call(run, Turn.of(["next"], 0), model="m-1")
    book.end("r1", "answered", answer="next")
    first, second = sorted(
        (s for s in telemetry.spans() if s.name == "chat m-1"), key=lambda s: s.start_time or 0
    )
    assert (first.start_time, first.end_time) == (started, ended)
    attributes = _attributes(first)
    assert attributes[semconv.GEN_AI_RESPONSE_FINISH_REASONS] == ("length",)
    assert attributes[semconv.GEN_AI_RESPONSE_ID] == "resp-1"
    assert attributes[semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] == 0.25
    assert attributes[semconv.REACT_ITERATION_INDEX] == 0
    assert _attributes(second)[semconv.REACT_ITERATION_INDEX] == 1


def test_a_failed_call_marks_the_run_and_the_next_good_call_clears_it(
    telemetry: InMemoryTelemetry,
) -> None:
    book = _book(telemetry)
    run = book.start("r1", "helper")
    assert run is not None
    book.model_call(run, None, model="m-1", error_type="RateLimitError")
    assert run.last_failed and run.calls == 1
    book.model_call(run, Turn.of(["ok"], 0), model="m-1")
    assert not run.last_failed
    book.end("r1", "answered", answer="ok")


def test_a_blank_forced_answer_recovers_nothing(telemetry: InMemoryTelemetry) -> None:
    book = _book(telemetry)
    run = book.start("r1", "helper")
    assert run is not None
    book.model_call(run, Turn.of(["  "], 0), model="m-1", node=semconv.NODE_SYNTHESIZE_FALLBACK)
    assert run.fallbacks == 1 and run.recovered is False
    book.end("r1", "forced", answer="  ")
    assert _attributes(telemetry.span(RUN_SPAN))[semconv.RESPONSE_EMPTY] is True


def test_call_starts_keep_the_newest_past_their_bound(telemetry: InMemoryTelemetry) -> None:
    book = _book(telemetry)
    run = book.start("r1", "helper")
    assert run is not None
    for n in range(MAX_CALL_STARTS + 1):
        book.call_started(run, f"c{n}")
    assert len(run.call_starts) == MAX_CALL_STARTS
    assert "c0" not in run.call_starts and f"c{MAX_CALL_STARTS}" in run.call_starts
    book.end("r1", "answered", answer="ok")


def test_a_tool_kept_under_its_own_key_is_ended_by_that_key(telemetry: InMemoryTelemetry) -> None:
    book = _book(telemetry)
    run = book.start("r1", "helper")
    assert run is not None
    started = time.time_ns() - 5_000_000
    book.tools.start(run, "lookup", "call-1", {"q": 1}, start_ns=started, key="span-9")
    assert list(run.tools) == ["span-9"]
    ended = started + 1_000_000
    assert book.tools.end(run, "span-9", "found", None, end_ns=ended)
    assert telemetry.span("execute_tool lookup").end_time == ended
    book.end("r1", "answered", answer="ok")


def test_open_tools_hold_at_their_bound_and_close_the_oldest_one_past(
    telemetry: InMemoryTelemetry,
) -> None:
    book = _book(telemetry)
    run = book.start("r1", "helper")
    assert run is not None
    for n in range(MAX_OPEN_TOOLS):
        book.start_tool(run, "lookup", f"c{n}", None)
    assert len(run.tools) == MAX_OPEN_TOOLS and not telemetry.spans()  # at the bound: all open
    book.start_tool(run, "lookup", "one-past", None)
    assert "c0" not in run.tools and "one-past" in run.tools
    [closed] = telemetry.spans()
    assert _attributes(closed)[semconv.STEP_UNFINISHED] is True
    book.end("r1", "answered", answer="ok")


def test_a_failed_tool_result_is_not_captured_as_its_result(
    telemetry: InMemoryTelemetry,
) -> None:
    book = _book(telemetry, capture=True)
    run = book.start("r1", "helper")
    assert run is not None
    book.start_tool(run, "lookup", "c1", {"q": 1})
    book.end_tool(run, "c1", "Traceback: secret", "ToolError")
    attributes = _attributes(telemetry.span("execute_tool lookup"))
    assert semconv.GEN_AI_TOOL_CALL_RESULT not in attributes
    assert attributes[semconv.ERROR_TYPE] == "ToolError"
    book.end("r1", "answered", answer="ok")


# --- the turn's shape: a text part, an empty one, none -------------------------------------


def test_an_empty_text_part_is_still_a_text_part() -> None:
    empty = Turn.of([""], 0)
    assert empty.has_text_part and empty.content_type == "str" and empty.blank
    assert Turn.of([], 0).content_type == "NoneType"


def test_a_framework_that_records_only_text_has_no_text_part_when_it_is_blank() -> None:
    assert not Turn.read("  ", 0).has_text_part
    assert Turn.read("hi", 0).has_text_part


def test_a_turn_without_tool_calls_bails_with_no_content_and_reports_none() -> None:
    last = Turn.of(["  "], 0)
    assert shape_bail(last) == "no_content_no_tool_calls"
    assert shape_bail(Turn.of([], 1)) == "tool_calls_with_no_text"
    event = bail_event("r1", 0, last, "no_content_no_tool_calls")
    assert event.has_tool_calls is False and event.tool_call_count == 0
    assert bail_event("r1", -1, None, "no_content_no_tool_calls").iteration_index == 0


@pytest.mark.parametrize(
    ("output", "is_answer"),
    [(None, False), ("", False), (" \n", False), ("x", True), ({"a": 1}, True), ([], True)],
)
def test_a_final_output_is_an_answer_unless_missing_or_blank_text(
    output: object, is_answer: bool
) -> None:
    assert answered(output) is is_answer


def test_a_run_abandoned_before_its_span_opened_records_nothing(
    telemetry: InMemoryTelemetry,
) -> None:
    book = _book(telemetry)
    book.start("r1", "helper", open_now=False)
    book.end("r1", "abandoned")
    assert telemetry.spans() == [] and telemetry.value(semconv.AGENT_RUNS.name) == 0
    assert book.open_runs == 0
