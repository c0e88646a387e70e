"""How a Pydantic AI run ended, from its result or the exception it raised, and its last turn.

Classification is by exception *class* (never its message): ``UsageLimitExceeded`` is the run's
budget (``UsageLimits``) running out, a step cap; ``UnexpectedModelBehavior`` itself (not its
subclasses, the content filter and the output-token limit) is the agent giving up on the model's
responses once its retries are spent: the model never produced an answer the agent could use.
Both are silent bails. A model turn's shape is read from its parts' ``part_kind``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Final, Literal

from pydantic_ai.exceptions import UnexpectedModelBehavior, UsageLimitExceeded

from symfonic_otel import semconv
from symfonic_otel.events import ContentType, TerminationOutcome, TerminationReason

__all__ = ["Ending", "Turn", "ending_of", "turn_of"]

Kind = Literal["ok", "budget", "retries", "cancelled", "error"]

_CANCELLED: Final = (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit)
_MAX_PARTS: Final = 256
_MAX_TEXT_CHARS: Final = 65_536
_MAX_TYPE_NAME: Final = 128


@dataclass(frozen=True, slots=True)
class Turn:
    """One model response: its text (bounded), its tool calls, the provider's finish reason."""

    text: str
    tool_calls: int
    has_text_part: bool
    finish_reason: str | None

    @property
    def content_type(self) -> ContentType:
        return "str" if self.has_text_part else "NoneType"

    @property
    def blank(self) -> bool:
        return not self.text.strip()


def turn_of(response: object) -> Turn:
    parts = getattr(response, "parts", None)
    texts: list[str] = []
    size = tool_calls = 0
    has_text = False
    for part in list(parts[:_MAX_PARTS]) if isinstance(parts, list | tuple) else []:
        kind = getattr(part, "part_kind", None)
        if kind == "text":
            content = getattr(part, "content", None)
            if isinstance(content, str):
                has_text = True
                room = _MAX_TEXT_CHARS - size
                texts.append(content[: max(room, 0)])
                size += min(len(content), max(room, 0))
        elif kind == "tool-call":
            tool_calls += 1
    finish = getattr(response, "finish_reason", None)
    return Turn("".join(texts), tool_calls, has_text, finish if isinstance(finish, str) else None)


@dataclass(frozen=True, slots=True)
class Ending:
    """The run's verdict: outcome, exit stop reason, error type, and the bail if it was one."""

    outcome: TerminationOutcome
    stop_reason: str
    error_type: str | None
    bail: TerminationReason | None


def _classify(error: BaseException | None) -> Kind:
    if error is None:
        return "ok"
    if isinstance(error, UsageLimitExceeded):
        return "budget"
    if type(error) is UnexpectedModelBehavior:
        return "retries"
    if isinstance(error, _CANCELLED):
        return "cancelled"
    return "error"


def _by_shape(last: Turn | None) -> TerminationReason:
    """A turn with tool calls (an output tool's too) ended still calling tools; any other turn,
    blank or holding text the agent could not accept, gave no usable content."""
    if last is not None and last.tool_calls:
        return "tool_calls_with_no_text"
    return "no_content_no_tool_calls"


def ending_of(error: BaseException | None, answered: bool, last: Turn | None) -> Ending:
    """``answered``: a completed run's output is not empty (ignored when the run raised)."""
    kind = _classify(error)
    name = type(error).__name__[:_MAX_TYPE_NAME] if error is not None else None
    if kind == "ok":
        bail = None if answered else _by_shape(last)
        return Ending("completed", "end_turn", None, bail)
    if kind == "budget":  # the model was still working when the budget ran out
        return Ending("error", semconv.STOP_REASON_RECURSION_LIMIT, name, "tool_calls_with_no_text")
    if kind == "retries":
        return Ending("error", semconv.STOP_REASON_ERROR, name, _by_shape(last))
    if kind == "cancelled":
        return Ending("cancelled", semconv.STOP_REASON_INTERRUPTED, None, None)
    return Ending("error", semconv.STOP_REASON_ERROR, name, None)
