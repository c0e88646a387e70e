"""A model turn as the framework adapters read it, what a bail after it reports, and the content
attributes they capture (gated on capture by the caller)."""

from __future__ import annotations

from dataclasses import dataclass

from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.events import ContentType, ReactLoopEndEvent, TerminationReason
from symfonic_otel.read.content import json_text

__all__ = ["Turn", "bail_event", "captured"]


@dataclass(frozen=True, slots=True)
class Turn:
    """One model turn: its text (bounded by the reader) and how many tools it asked for."""

    text: str
    tool_calls: int

    @property
    def content_type(self) -> ContentType:
        return "str" if self.text.strip() else "NoneType"


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
    """``value`` as JSON text under ``key``, flagged when truncated."""
    text, truncated = json_text(value)
    attributes: dict[str, AttributeValue] = {key: text}
    if truncated:
        attributes[semconv.CONTENT_TRUNCATED] = True
    return attributes
