"""How a run ended, as one value, and the optional marker that tells the user (seed 004).

The run's exit is what telemetry reports as ``symfonic.run.stop_reason``: the normalised stop
reason of the terminal turn (``end_turn``, ``max_tokens``, ``refusal``, or a provider value
verbatim) when the model ended the turn, ``loop_detected`` / ``recursion_limit`` when the loop
cut it, ``interrupted`` / ``error`` when it never finished. Only a clean ``end_turn`` is left
unmarked when ``FrameworkConfig(stop_reason_notes=True)``.
"""

from __future__ import annotations

from typing import Final

from symfonic_otel import semconv
from symfonic_otel.agent.termination import END_TURN, MAX_TOKENS, REFUSAL, RouteReason

__all__ = [
    "ERROR",
    "INTERRUPTED",
    "LOOP_DETECTED",
    "RECURSION_LIMIT",
    "run_exit",
    "stop_note",
]

# The run exits are telemetry label values: one definition, in the names module.
LOOP_DETECTED: Final = semconv.STOP_REASON_LOOP_DETECTED
RECURSION_LIMIT: Final = semconv.STOP_REASON_RECURSION_LIMIT
INTERRUPTED: Final = semconv.STOP_REASON_INTERRUPTED
ERROR: Final = semconv.STOP_REASON_ERROR

TRUNCATED_NOTE: Final = "[answer cut off: the model reached its output limit]"
REFUSED_NOTE: Final = "[the model declined to answer this request]"


def run_exit(ended_by: RouteReason, stop_reason: str) -> str:
    """The exit of a completed run from the rule that ended it and the terminal stop reason."""
    if ended_by == "loop_detected":
        return LOOP_DETECTED
    if ended_by == "recursion_limit":
        return RECURSION_LIMIT
    return stop_reason


def stop_note(exit_reason: str, *, model_calls: int) -> str | None:
    """The marker for a run that ended ``exit_reason``; ``None`` for a clean ``end_turn``."""
    if exit_reason == END_TURN:
        return None
    if exit_reason == MAX_TOKENS:
        return TRUNCATED_NOTE
    if exit_reason == REFUSAL:
        return REFUSED_NOTE
    if exit_reason == RECURSION_LIMIT:
        return f"[no final answer within the limit of {model_calls} model calls]"
    return f"[stopped: {exit_reason}]"
