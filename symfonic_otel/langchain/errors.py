"""How a LangChain run ended, from the exception it raised (if any).

Classification is by exception *type* only: message texts change between releases and
languages, and often quote user data. LangGraph control flow (``GraphInterrupt`` and the rest of
the ``GraphBubbleUp`` family) is not an error; cancellation is its own outcome; a step budget
that raises (LangGraph's recursion limit, LangChain's call-limit middlewares with exit behaviour
"error") is an error that is also a silent bail.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from functools import cache
from typing import Final, Literal

from symfonic_otel.events import TerminationOutcome
from symfonic_otel.read.step_caps import STEP_CAP_ERROR_TYPES

__all__ = ["ErrorKind", "classify", "error_type", "exit_reason", "outcome"]

ErrorKind = Literal["ok", "control_flow", "interrupt", "cancelled", "recursion", "error"]

_CANCELLED_TYPES: Final = (KeyboardInterrupt, asyncio.CancelledError, GeneratorExit)
# A class name is short in practice; a generated class could have any name, and the adapter
# keeps no caller-controlled string unbounded.
_MAX_TYPE_NAME: Final = 128

# ``symfonic.run.stop_reason`` of runs that did not end on a model turn (DESIGN: the run's exit).
STOP_INTERRUPTED: Final = "interrupted"
STOP_RECURSION_LIMIT: Final = "recursion_limit"
STOP_ERROR: Final = "error"


@dataclass(frozen=True)
class _GraphErrors:
    """LangGraph's control-flow and recursion exception types (empty without LangGraph)."""

    bubble_up: tuple[type[BaseException], ...]
    interrupt: tuple[type[BaseException], ...]
    recursion: tuple[type[BaseException], ...]


@cache
def _graph_errors() -> _GraphErrors:
    """Imported on first use so that plain LangChain users need no LangGraph installed."""
    try:
        from langgraph.errors import GraphBubbleUp, GraphInterrupt, GraphRecursionError
    except Exception:
        return _GraphErrors((), (), ())
    return _GraphErrors((GraphBubbleUp,), (GraphInterrupt,), (GraphRecursionError,))


def _budget_error(error: BaseException) -> bool:
    """Whether ``error`` is a framework's step budget running out (``read.step_caps``).

    Classes are looked up only among modules already imported: an error of a class whose module
    was never imported cannot be one of them, and telemetry imports nothing on the way.
    """
    for known in STEP_CAP_ERROR_TYPES:
        module = sys.modules.get(known.module)
        kind = getattr(module, known.name, None) if module is not None else None
        if isinstance(kind, type) and isinstance(error, kind):
            return True
    return False


def classify(error: object) -> ErrorKind:
    """``ok`` for ``None``; anything that is not an exception counts as an ``error``."""
    if error is None:
        return "ok"
    if not isinstance(error, BaseException):
        return "error"
    errors = _graph_errors()
    if errors.interrupt and isinstance(error, errors.interrupt):
        return "interrupt"
    if errors.bubble_up and isinstance(error, errors.bubble_up):
        return "control_flow"
    if isinstance(error, _CANCELLED_TYPES):
        return "cancelled"
    if (errors.recursion and isinstance(error, errors.recursion)) or _budget_error(error):
        return "recursion"
    return "error"


def outcome(kind: ErrorKind) -> TerminationOutcome:
    """The run / call outcome of an ending of ``kind``."""
    if kind in ("error", "recursion"):
        return "error"
    return "cancelled" if kind == "cancelled" else "completed"


def error_type(error: object, kind: ErrorKind) -> str | None:
    """The exception's type name, for endings whose outcome is ``error`` (else None)."""
    if outcome(kind) != "error" or error is None:
        return None
    return type(error).__name__[:_MAX_TYPE_NAME]


def exit_reason(kind: ErrorKind) -> str | None:
    """The run's exit for an ending by exception; None when it ended on a model turn."""
    if kind in ("interrupt", "cancelled"):
        return STOP_INTERRUPTED
    if kind == "recursion":
        return STOP_RECURSION_LIMIT
    if kind == "error":
        return STOP_ERROR
    return None
