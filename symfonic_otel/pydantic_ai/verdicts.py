"""How a Pydantic AI run ended, from the exception it raised, and a model response's shape.

Classification is by exception *class* (never its message): ``UsageLimitExceeded`` is the run's
budget (``UsageLimits``) running out, a step cap; ``UnexpectedModelBehavior`` itself (not its
subclasses, the content filter and the output-token limit) is the agent giving up on the model's
responses once its retries are spent: the model never produced an answer the agent could use.
Both are silent bails (the invocation layer's ``capped_raised`` and ``gave_up``). A model turn's
shape is read from its parts' ``part_kind``.
"""

from __future__ import annotations

import asyncio
from typing import Final, Literal

from pydantic_ai.exceptions import UnexpectedModelBehavior, UsageLimitExceeded

from symfonic_otel.invocation import Ending, Turn

__all__ = ["ending_of", "turn_of"]

Kind = Literal["ok", "budget", "retries", "cancelled", "error"]
_ENDINGS: Final[dict[Kind, Ending]] = {
    "ok": "answered",
    "budget": "capped_raised",  # the model was still working when the budget ran out
    "retries": "gave_up",
    "cancelled": "cancelled",
    "error": "error",
}

_CANCELLED: Final = (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit)
_MAX_PARTS: Final = 256
_MAX_TEXT_CHARS: Final = 65_536


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


def ending_of(error: BaseException | None) -> Ending:
    """The ending of a run that returned (``error`` None) or raised ``error``."""
    return _ENDINGS[_classify(error)]
