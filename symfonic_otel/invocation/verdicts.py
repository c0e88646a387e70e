"""How a run ended, as every adapter reports it, and what that verdict records.

The adapter classifies the end from its framework's structure (an exception class, a stop
reason, an iteration count) into an ``Ending``; this module turns it into the run's outcome,
stop reason, error type, silent bail and answer flag, the same way for every adapter:

``answered``  ended on an answer (blank: a bail by the last turn's shape), with the
              framework's stop reason;
``capped``    the step cap ended it normally: a bail, even when a forced final answer then
              recovered text (the answer flag says whether it did, as the contract counts the
              bail before its fallback); ``forced``: the same, recovered as the synthesis call said;
``capped_raised``  the step cap raised ``error_type``: a bail and an error;
``gave_up``   the framework gave up on the model's responses (spent retries): an error and a
              bail by the last turn's shape;
``error`` / ``cancelled`` / ``abandoned``: no verdict on the answer;
``paused``    waiting for input (resumed later): an interrupt, neither answer nor bail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from symfonic_otel import semconv
from symfonic_otel.core.run_end import AdapterRunEnd
from symfonic_otel.events import TerminationReason
from symfonic_otel.invocation.runs import FrameworkRun
from symfonic_otel.invocation.turns import shape_bail

__all__ = ["END_TURN", "Ending", "Verdict", "verdict_of"]

Ending = Literal[
    "answered",
    "capped",
    "capped_raised",
    "forced",
    "gave_up",
    "error",
    "cancelled",
    "paused",
    "abandoned",
]
END_TURN: Final = "end_turn"
_STILL_WORKING: Final[TerminationReason] = "tool_calls_with_no_text"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the run's end records: its AgentEnd, its bail if any, and the answer flag."""

    end: AdapterRunEnd
    bail: TerminationReason | None = None
    answered: bool | None = None
    paused: bool = False


def verdict_of(
    run: FrameworkRun,
    ending: Ending,
    *,
    answered: bool | None,
    final: str | None,
    error_type: str | None,
    stop_reason: str,
    duration_ms: float | None,
) -> Verdict:
    """``answered``: the adapter's (or the answer text's) verdict on the answer; ``final``:
    the answer as the span may show it (already gated on capture)."""
    run_id = run.run_id
    if ending == "abandoned":
        return Verdict(AdapterRunEnd(run_id, "abandoned"))
    if ending == "cancelled":
        stop = semconv.STOP_REASON_INTERRUPTED
        return Verdict(AdapterRunEnd(run_id, "cancelled", None, duration_ms, stop_reason=stop))
    error = (error_type or semconv.OTHER_VALUE)[:128]
    if ending in ("error", "gave_up"):  # gave up: the model never gave a usable answer
        stop = semconv.STOP_REASON_ERROR
        end = AdapterRunEnd(run_id, "error", None, duration_ms, stop_reason=stop, error_type=error)
        return Verdict(end, shape_bail(run.last) if ending == "gave_up" else None)
    limit = semconv.STOP_REASON_RECURSION_LIMIT
    if ending == "capped_raised":
        end = AdapterRunEnd(run_id, "error", None, duration_ms, stop_reason=limit, error_type=error)
        return Verdict(end, _STILL_WORKING)
    if ending in ("capped", "forced"):
        end = AdapterRunEnd(run_id, "completed", final, duration_ms, stop_reason=limit)
        return Verdict(end, _STILL_WORKING, answered)
    if ending == "paused":
        stop = semconv.STOP_REASON_INTERRUPTED
        end = AdapterRunEnd(run_id, "completed", final, duration_ms, stop_reason=stop)
        return Verdict(end, None, answered, paused=True)
    bail = shape_bail(run.last) if answered is False else None
    end = AdapterRunEnd(run_id, "completed", final, duration_ms, stop_reason=stop_reason)
    return Verdict(end, bail, answered)
