"""The verdict of one agent run: outcome, answer blank or not, silent bail, stop reason.

The rules are the package's termination contract, read from other instrumentations' spans:

1. A framework step cap (an error of ``read.step_caps`` on the run span, as its
   exception event, or on a span inside the run that is no run itself) is a silent bail
   ``tool_calls_with_no_text`` with stop reason ``recursion_limit``, outcome ``error`` (the
   framework raised). The same error seen again on a run around a capped sub-run is that
   sub-run's bail, counted once: the outer run is an ``error`` run with stop reason ``error``.
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
from symfonic_otel.spans.traces import AgentRun

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


def judge(run: AgentRun) -> RunVerdict:
    duration = _duration(run)
    calls = run.calls
    if run.step_cap:
        return RunVerdict(
            "error",
            None,
            semconv.STOP_REASON_RECURSION_LIMIT,
            TOOL_CALLS_WITH_NO_TEXT,
            duration,
            calls.count,
        )
    if run.failed or run.inherited_cap:
        # A run that failed right after a known-blank completion (a framework out of output
        # retries) gave its user nothing because the model said nothing: still a silent bail.
        bail = NO_CONTENT_NO_TOOL_CALLS if calls.last_output is Output.BLANK else None
        return RunVerdict("error", None, semconv.STOP_REASON_ERROR, bail, duration, calls.count)
    if calls.last_output is Output.TOOL_CALLS:
        return RunVerdict(
            "completed",
            True,
            semconv.STOP_REASON_RECURSION_LIMIT,
            TOOL_CALLS_WITH_NO_TEXT,
            duration,
            calls.count,
        )
    stop = normalise(calls.last_finish)
    answer = run.final_output if run.final_output is not Output.UNKNOWN else calls.last_output
    if answer is Output.BLANK:
        return RunVerdict("completed", True, stop, NO_CONTENT_NO_TOOL_CALLS, duration, calls.count)
    empty = False if answer is Output.TEXT else None
    return RunVerdict("completed", empty, stop, None, duration, calls.count)


def relayed(verdict: RunVerdict) -> Output:
    """What a sub-run's ending stands for as the last "call" of the run around it: a parent
    that ends on a capped or blank sub-run without a model call of its own relays no answer."""
    if verdict.outcome != "completed":
        return Output.UNKNOWN
    if verdict.bail == TOOL_CALLS_WITH_NO_TEXT:
        return Output.TOOL_CALLS
    if verdict.bail == NO_CONTENT_NO_TOOL_CALLS:
        return Output.BLANK
    return Output.TEXT if verdict.empty is False else Output.UNKNOWN


def normalise(finish: str | None) -> str | None:
    if finish is None:
        return None
    return _NORMALISED.get(finish.lower(), finish)


def _duration(run: AgentRun) -> float | None:
    if run.end < run.start:
        return None
    return (run.end - run.start) / 1e9
