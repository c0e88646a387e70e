"""The verdict of one run read from spans, rule by rule: step cap, failure (and a capped sub-run
seen again), tool calls last, a blank answer (the run's own before its last call's), the stop
reason's vocabulary, the duration in seconds from nanoseconds, and what a sub-run relays."""

from __future__ import annotations

import pytest

from symfonic_otel import semconv
from symfonic_otel.spans.reading import Output
from symfonic_otel.spans.traces import AgentRun, Calls, Tenant
from symfonic_otel.spans.verdict import (
    NO_CONTENT_NO_TOOL_CALLS,
    TOOL_CALLS_WITH_NO_TEXT,
    RunVerdict,
    judge,
    normalise,
    relayed,
)

START = 1_000_000_000
END = START + 2_500_000_000  # 2.5 s later, in nanoseconds


def run(
    last: Output = Output.TEXT,
    finish: str | None = "stop",
    *,
    count: int = 2,
    final: Output = Output.UNKNOWN,
    start: int = START,
    end: int = END,
    **flags: bool,
) -> AgentRun:
    calls = Calls(count=count, last_end=end - 1, last_output=last, last_finish=finish)
    made = AgentRun(calls, False, None, start, end, (1, 2), Tenant(), **flags)
    made.answer(end, final)
    return made


def test_an_answer_completes_with_its_normalised_stop_and_duration_in_seconds() -> None:
    assert judge(run()) == RunVerdict("completed", False, "end_turn", None, 2.5, 2)


def test_a_step_cap_is_an_error_and_a_tool_call_bail() -> None:
    verdict = judge(run(step_cap=True, failed=True))
    assert verdict == RunVerdict(
        "error", None, semconv.STOP_REASON_RECURSION_LIMIT, TOOL_CALLS_WITH_NO_TEXT, 2.5, 2
    )


@pytest.mark.parametrize("flag", ["failed", "inherited_cap"])
def test_a_failed_run_or_one_around_a_capped_sub_run_is_an_error_without_a_bail(
    flag: str,
) -> None:
    assert judge(run(**{flag: True})) == RunVerdict(
        "error", None, semconv.STOP_REASON_ERROR, None, 2.5, 2
    )


def test_a_failed_run_after_a_known_blank_call_is_a_blank_bail() -> None:
    assert judge(run(Output.BLANK, failed=True)).bail == NO_CONTENT_NO_TOOL_CALLS
    assert judge(run(Output.UNKNOWN, failed=True)).bail is None
    assert judge(run(Output.TOOL_CALLS, failed=True)).bail is None


def test_a_run_whose_last_call_asked_for_tools_completed_as_a_tool_call_bail() -> None:
    verdict = judge(run(Output.TOOL_CALLS, "tool_calls", final=Output.TEXT))
    assert verdict == RunVerdict(
        "completed", True, semconv.STOP_REASON_RECURSION_LIMIT, TOOL_CALLS_WITH_NO_TEXT, 2.5, 2
    )


def test_the_run_s_own_final_output_outranks_its_last_call_s() -> None:
    assert judge(run(Output.TEXT, final=Output.BLANK)).bail == NO_CONTENT_NO_TOOL_CALLS
    assert judge(run(Output.TEXT, final=Output.BLANK)).empty is True
    assert judge(run(Output.BLANK, final=Output.TEXT)) == judge(run())
    blank = judge(run(Output.BLANK, "length"))
    assert blank == RunVerdict("completed", True, "max_tokens", NO_CONTENT_NO_TOOL_CALLS, 2.5, 2)


def test_an_answer_whose_content_was_not_recorded_has_no_empty_flag() -> None:
    assert judge(run(Output.UNKNOWN)).empty is None
    assert judge(run(Output.UNKNOWN)).bail is None


def test_a_run_ending_before_it_started_has_no_duration() -> None:
    assert judge(run(start=END, end=START)).duration_s is None
    assert judge(run(start=START, end=START)).duration_s == 0.0


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("STOP", "end_turn"),
        ("complete", "end_turn"),
        ("max_output_tokens", "max_tokens"),
        ("SAFETY", "refusal"),
        ("content_filter", "refusal"),
        ("tool_use", "tool_use"),
        ("function_call", "tool_use"),
        ("Odd_Reason", "Odd_Reason"),
        (None, None),
    ],
)
def test_finish_reasons_map_onto_the_stop_reason_vocabulary(
    finish: str | None, stop: str | None
) -> None:
    assert normalise(finish) == stop


def test_a_sub_run_relays_what_its_verdict_says_to_the_run_around_it() -> None:
    assert relayed(judge(run())) is Output.TEXT
    assert relayed(judge(run(Output.UNKNOWN))) is Output.UNKNOWN
    assert relayed(judge(run(Output.BLANK))) is Output.BLANK
    assert relayed(judge(run(Output.TOOL_CALLS))) is Output.TOOL_CALLS
    assert relayed(judge(run(failed=True))) is Output.UNKNOWN
    assert relayed(judge(run(Output.BLANK, failed=True))) is Output.UNKNOWN
    assert relayed(judge(run(step_cap=True))) is Output.UNKNOWN
