"""A model turn as every adapter reads it, the bail its shape implies, and captured content.

One shape for all adapters: the turn's text (bounded), its tool calls, whether it had a text
part at all, and the provider's finish reason. What a run that ended after it reports as a
silent bail is read from that shape only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.events import ContentType, ReactLoopEndEvent, TerminationReason
from symfonic_otel.read.content import json_text

__all__ = ["MAX_TEXT_CHARS", "Turn", "answered", "bail_event", "captured", "shape_bail"]

MAX_TEXT_CHARS: Final = 65_536


@dataclass(frozen=True, slots=True)
class Turn:
    """One model response: its text (bounded), its tool calls, the provider's finish reason."""

    text: str
    tool_calls: int
    has_text_part: bool = True
    finish_reason: str | None = None

    @property
    def content_type(self) -> ContentType:
        return "str" if self.has_text_part else "NoneType"

    @property
    def blank(self) -> bool:
        return not self.text.strip()

    @classmethod
    def of(cls, texts: list[str], tool_calls: int, finish_reason: object = None) -> Turn:
        """From a response's text parts (none: no text part)."""
        text = "".join(texts)[:MAX_TEXT_CHARS]
        finish = str(finish_reason)[:64] if finish_reason is not None else None
        return cls(text, tool_calls, bool(texts), finish)

    @classmethod
    def read(cls, text: str, tool_calls: int) -> Turn:
        """From a framework that records only the text: blank text counts as no text part."""
        return cls(text[:MAX_TEXT_CHARS], tool_calls, bool(text.strip()))


def answered(output: object) -> bool:
    """A final output is an answer unless it is missing or blank text."""
    return output is not None and not (isinstance(output, str) and not output.strip())


def shape_bail(last: Turn | None) -> TerminationReason:
    """The bail a run that ended after ``last`` with no answer reports: still calling tools,
    or no usable content."""
    if last is not None and last.tool_calls:
        return "tool_calls_with_no_text"
    return "no_content_no_tool_calls"


def bail_event(
    run_id: str, iteration_index: int, last: Turn | None, reason: TerminationReason
) -> ReactLoopEndEvent:
    """The ReactLoopEnd of a run that bailed after ``last`` (its last model turn, if any)."""
    return ReactLoopEndEvent(
        run_id=run_id,
        iteration_index=max(iteration_index, 0),
        content_type=last.content_type if last is not None else "NoneType",
        has_tool_calls=last is not None and last.tool_calls > 0,
        tool_call_count=last.tool_calls if last is not None else 0,
        termination_reason=reason,
    )


def captured(key: str, value: object) -> dict[str, AttributeValue]:
    """``value`` as JSON text under ``key``, flagged when truncated (the caller gates capture)."""
    text, truncated = json_text(value)
    attributes: dict[str, AttributeValue] = {key: text}
    if truncated:
        attributes[semconv.CONTENT_TRUNCATED] = True
    return attributes
