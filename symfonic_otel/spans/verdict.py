"""The run verdict of one trace: outcome, answer blank or not, silent bail, stop reason.

The rules are the package's termination contract, read from other instrumentations' spans:

1. A framework step cap (``GraphRecursionError``, ``MaxTurnsExceeded``, ``UsageLimitExceeded``
   on the run span or as its exception event) is a silent bail ``tool_calls_with_no_text`` with
   stop reason ``recursion_limit``, outcome ``error`` (the framework raised).
2. Any other failed run span: outcome ``error``, stop reason ``error``; a silent bail
   ``no_content_no_tool_calls`` only when the last model call's output was known blank.
3. The last model call ended on tool calls (finish reason or recorded tool-call parts) with no
   text, and no model call after it: the run ended while the model was still calling tools (a
   step cap that answered with a canned message, a loop cut) -> ``tool_calls_with_no_text``,
   stop reason ``recursion_limit``.
4. The run's recorded final output is blank, or (none recorded) the last call's is ->
   ``no_content_no_tool_calls``.
5. Otherwise an answer; ``response.empty`` is false when text was seen, unknown (no flag) when
   content was not recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from symfonic_otel import semconv
from symfonic_otel.spans.reading import TOOL_FINISH_REASONS, Output
from symfonic_otel.spans.traces import TraceRun

TOOL_CALLS_WITH_NO_TEXT: Final = "tool_calls_with_no_text"
NO_CONTENT_NO_TOOL_CALLS: Final = "no_content_no_tool_calls"
# Provider finish reasons -> the normalised stop reasons the stop-reason counter knows. Values
# outside this table pass through (the metric emitter caps them).
_NORMALISED: Final = {
    "stop": "end_turn",
    "end_turn": "end_turn",
    "complete": "end_turn",
    "length": "max_tokens",
    "max_tokens": "max_tokens",
    "max_output_tokens": "max_tokens",
    "content_filter": "refusal",
    "refusal": "refusal",
    "safety": "refusal",
    "prohibited_content": "refusal",
    "blocklist": "refusal",
    **{reason: "tool_use" for reason in TOOL_FINISH_REASONS},
}


@dataclass(frozen=True, slots=True)
class RunVerdict:
    outcome: str
    empty: bool | None
    stop_reason: str | None
    bail: str | None  # termination reason, when the run is a silent bail
    duration_s: float | None
    iterations: int


def judge(run: TraceRun) -> RunVerdict:
    duration = _duration(run)
    if run.step_cap:
        return RunVerdict(
            "error",
            None,
            semconv.STOP_REASON_RECURSION_LIMIT,
            TOOL_CALLS_WITH_NO_TEXT,
            duration,
            run.chats,
        )
    if run.failed:
        # A run that failed right after a known-blank completion (a framework out of output
        # retries) gave its user nothing because the model said nothing: still a silent bail.
        bail = NO_CONTENT_NO_TOOL_CALLS if run.last_output is Output.BLANK else None
        return RunVerdict("error", None, semconv.STOP_REASON_ERROR, bail, duration, run.chats)
    if run.last_output is Output.TOOL_CALLS:
        return RunVerdict(
            "completed",
            True,
            semconv.STOP_REASON_RECURSION_LIMIT,
            TOOL_CALLS_WITH_NO_TEXT,
            duration,
            run.chats,
        )
    stop = normalise(run.last_finish)
    answer = run.final_output if run.final_output is not Output.UNKNOWN else run.last_output
    if answer is Output.BLANK:
        return RunVerdict("completed", True, stop, NO_CONTENT_NO_TOOL_CALLS, duration, run.chats)
    empty = False if answer is Output.TEXT else None
    return RunVerdict("completed", empty, stop, None, duration, run.chats)


def normalise(finish: str | None) -> str | None:
    if finish is None:
        return None
    return _NORMALISED.get(finish.lower(), finish)


def _duration(run: TraceRun) -> float | None:
    if run.run_start is None or run.run_end is None or run.run_end < run.run_start:
        return None
    return (run.run_end - run.run_start) / 1e9
