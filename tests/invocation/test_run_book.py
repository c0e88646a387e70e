"""The invocation layer on the real core handler and OTel SDK: every adapter's run model.

Each ending an adapter can report becomes one outcome, stop reason, error type and bail, the
same whichever framework reported it; the guard never raises into the agent and counts what it
swallowed; the open runs are bounded, and a run's open tools are closed with it.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from symfonic_otel import semconv
from symfonic_otel.invocation import Ending, RunBook, Turn
from symfonic_otel.invocation.calls import HeldCall
from symfonic_otel.testing.telemetry import InMemoryTelemetry

RUNS = semconv.AGENT_RUNS.name
BAILS = semconv.SILENT_BAILS.name
STILL = "tool_calls_with_no_text"  # the bail of a run still calling tools


def _book(telemetry: InMemoryTelemetry, **options: Any) -> RunBook:
    return RunBook(telemetry.handler(**options), "TestAdapter", 8)


def _run_to(book: RunBook, ending: Ending, last: Turn, **end: Any) -> None:
    run = book.start("r1", "helper")
    assert run is not None
    book.model_call(run, last, model="m-1", usage={"input_tokens": 3, "output_tokens": 1})
    book.end("r1", ending, **end)


@pytest.mark.parametrize(
    ("ending", "end", "outcome", "stop", "bail"),
    [
        ("answered", {"answer": "42"}, "completed", "end_turn", None),
        ("answered", {"answer": "  "}, "completed", "end_turn", STILL),
        ("capped", {}, "completed", "recursion_limit", STILL),
        (
            "capped_raised",
            {"error_type": "Cap"},
            "error",
            "recursion_limit",
            "tool_calls_with_no_text",
        ),
        ("gave_up", {"error_type": "Retries"}, "error", "error", STILL),
        ("error", {"error_type": "Boom"}, "error", "error", None),
        ("cancelled", {}, "cancelled", "interrupted", None),
        ("paused", {}, "completed", "interrupted", None),
    ],
)
def test_each_ending_is_one_outcome_stop_reason_and_bail(
    telemetry: InMemoryTelemetry,
    ending: Ending,
    end: dict[str, Any],
    outcome: str,
    stop: str,
    bail: str | None,
) -> None:
    book = _book(telemetry)
    _run_to(book, ending, Turn.of([], 1), **end)  # the last turn was still calling a tool
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: outcome}) == 1
    assert telemetry.value(semconv.STOP_REASONS.name, {semconv.RUN_STOP_REASON: stop}) == 1
    reasons = {semconv.REACT_TERMINATION_REASON: bail} if bail else None
    assert telemetry.value(BAILS, reasons) == (1 if bail else 0)
    span = telemetry.span("invoke_agent helper")
    if outcome == "error":
        assert span.status.status_code is StatusCode.ERROR
        assert (span.attributes or {})[semconv.ERROR_TYPE] == end["error_type"]
    assert book.open_runs == 0


def test_a_blank_answer_after_a_blank_turn_is_a_bail_with_no_content(
    telemetry: InMemoryTelemetry,
) -> None:
    _run_to(_book(telemetry), "answered", Turn.of([""], 0), answer="")
    assert telemetry.value(BAILS, {semconv.REACT_TERMINATION_REASON: "no_content_no_tool_calls"})


@pytest.mark.parametrize(("text", "recovered"), [("the best I have", True), ("", False)])
def test_a_forced_answer_is_the_synthesis_fallback_and_decides_the_answer(
    telemetry: InMemoryTelemetry, text: str, recovered: bool
) -> None:
    book = _book(telemetry)
    run = book.start("r1", "helper")
    assert run is not None
    book.model_call(run, Turn.of([], 1), model="m-1")
    forced = Turn.of([text], 0)
    book.model_call(run, forced, model="m-1", node=semconv.NODE_SYNTHESIZE_FALLBACK)
    assert run.recovered is recovered and run.last is not forced  # the bail reports the loop's
    book.end("r1", "forced", answer=text)
    fallbacks = {semconv.SYNTHESIS_RECOVERED: recovered}
    assert telemetry.value(semconv.SYNTHESIS_FALLBACKS.name, fallbacks) == 1
    assert telemetry.value(BAILS, {semconv.REACT_TERMINATION_REASON: "tool_calls_with_no_text"})


def test_a_held_call_is_the_synthesis_fallback_only_when_flushed_as_the_forced_answer(
    telemetry: InMemoryTelemetry,
) -> None:
    book = _book(telemetry)
    run = book.start("r1", "helper")
    assert run is not None
    looping = Turn.of([], 1)
    book.hold(run, HeldCall(looping, {"model": "m-1"}))
    book.flush(run, synthesis=False)  # the next call started: an ordinary turn of the loop
    assert run.fallbacks == 0 and run.last is looping
    forced = Turn.of(["the best I have"], 0)
    book.hold(run, HeldCall(forced, {"model": "m-1"}))
    book.flush(run, synthesis=True)  # the run ended at its step cap: the forced final answer
    assert run.fallbacks == 1 and run.recovered is True and run.last is looping
    book.end("r1", "forced", answer="the best I have")
    assert telemetry.value(semconv.SYNTHESIS_FALLBACKS.name) == 1
    assert telemetry.value(semconv.SYNTHESIS_FALLBACKS.name, {semconv.SYNTHESIS_RECOVERED: True})


def test_the_guard_never_raises_and_counts_each_failure(telemetry: InMemoryTelemetry) -> None:
    book = _book(telemetry)

    def broken() -> None:
        raise RuntimeError("telemetry bug")

    assert book.guard("hook", broken) is None
    assert book.guard("hook", broken) is None
    dropped = {semconv.TELEMETRY_EVENT: "TestAdapter.hook"}
    assert telemetry.value(semconv.DROPPED_EVENTS.name, dropped) == 2


def test_past_the_bound_the_oldest_run_is_abandoned_with_its_tools_closed(
    telemetry: InMemoryTelemetry,
) -> None:
    book = RunBook(telemetry.handler(), "TestAdapter", 1, evicted="run_evicted")
    first = book.start("r1", "helper")
    assert first is not None
    book.start_tool(first, "lookup", "c1", {"key": "k"})
    assert book.start("r1", "helper") is None  # a redelivered start
    book.start("r2", "helper")
    assert book.open_runs == 1 and book.get("r1") is None
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "abandoned"}) == 1
    tool = telemetry.span("execute_tool lookup")
    assert (tool.attributes or {})[semconv.STEP_UNFINISHED] is True
    evicted = {semconv.TELEMETRY_EVENT: "TestAdapter.run_evicted"}
    assert telemetry.value(semconv.DROPPED_EVENTS.name, evicted) == 1
    book.close_all()
    assert book.open_runs == 0 and telemetry.value(RUNS, {semconv.RUN_OUTCOME: "abandoned"}) == 2


def test_content_stays_out_unless_captured(telemetry: InMemoryTelemetry) -> None:
    book = _book(telemetry)
    run = book.start("r1", "helper", query="secret question")
    assert run is not None
    book.start_tool(run, "lookup", "c1", {"key": "secret argument"})
    book.end_tool(run, "c1", "secret result", None)
    book.model_call(run, Turn.of(["secret answer"], 0), model="m-1")
    book.end("r1", "answered", answer="secret answer")
    for span in telemetry.spans():
        seen = repr((span.attributes, [event.attributes for event in span.events]))
        assert "secret" not in seen


def test_calls_of_one_tool_paired_by_name_end_in_the_order_they_started(
    telemetry: InMemoryTelemetry,
) -> None:
    book = _book(telemetry, capture_content=True)
    run = book.start("r1", "helper")
    assert run is not None
    first = book.tools.named_id(run, "lookup")
    book.start_tool(run, "lookup", first, {"key": "a"})
    second = book.tools.named_id(run, "lookup")
    book.start_tool(run, "lookup", second, {"key": "b"})
    book.tools.end_named(run, "lookup", "result a", None)
    assert list(run.tools) == [second]  # the first call's span closed, the second still open
    book.tools.end_named(run, "lookup", "failed b", "ToolError")
    assert not run.tools
    book.end("r1", "answered", answer="done")
    ended = [dict(span.attributes or {}) for span in telemetry.spans()]
    tools = [a for a in ended if a.get(semconv.GEN_AI_TOOL_CALL_ARGUMENTS) is not None]
    assert [a[semconv.GEN_AI_TOOL_CALL_ARGUMENTS] for a in tools] == [
        '{"key": "a"}',
        '{"key": "b"}',
    ]
    assert tools[0].get(semconv.GEN_AI_TOOL_CALL_RESULT) == "result a"
    assert semconv.ERROR_TYPE not in tools[0]
    assert tools[1][semconv.ERROR_TYPE] == "ToolError"
