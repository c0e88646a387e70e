"""How an adapter gets its handler, with loop tracking (core/loops.py) set where it is built."""

from __future__ import annotations

from symfonic_otel.core.loops import DEFAULT_LOOP_THRESHOLD, DEFAULT_RUNAWAY_CALLS
from symfonic_otel.handler import OTelCallbackHandler

__all__ = ["DEFAULT_LOOP_THRESHOLD", "DEFAULT_RUNAWAY_CALLS", "loop_handler"]


def loop_handler(
    owner: str,
    handler: OTelCallbackHandler | None,
    loop_threshold: int = DEFAULT_LOOP_THRESHOLD,
    runaway_calls: int = DEFAULT_RUNAWAY_CALLS,
) -> OTelCallbackHandler:
    """An adapter's handler: ``handler`` shared as it is, or one built with the loop options
    (a shared handler's options are set where it is built)."""
    if handler is not None and not isinstance(handler, OTelCallbackHandler):
        raise TypeError(
            f"{owner}: handler must be an OTelCallbackHandler, got {type(handler).__name__}"
        )
    if handler is None:
        return OTelCallbackHandler(loop_threshold=loop_threshold, runaway_calls=runaway_calls)
    if (loop_threshold, runaway_calls) != (DEFAULT_LOOP_THRESHOLD, DEFAULT_RUNAWAY_CALLS):
        raise TypeError(f"{owner}: pass handler= or loop_threshold / runaway_calls, not both")
    return handler


def positive(owner: str, name: str, value: object) -> int:
    """An adapter's bound option (``max_runs`` ...), checked where it is given."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{owner}: {name} must be a positive int, got {value!r}")
    return value
