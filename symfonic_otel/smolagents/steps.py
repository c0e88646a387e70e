"""What the adapter reads from smolagents' memory steps, by structure only (types and fields).

A step's model turn (text, tool calls, token usage, timing) and whether it is the step
smolagents appends when ``max_steps`` ran out: an ``ActionStep`` whose ``error`` is an
``AgentMaxStepsError``, holding the forced final-answer call's output and usage.

A step's tool calls: smolagents fills ``tool_calls`` only once its tools returned (a
``ToolCallingAgent``); when a tool raised, the step has an ``error`` and no ``tool_calls``, and
the calls are on the model's output message (``model_output_message.tool_calls``).
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from smolagents.memory import ActionStep  # type: ignore[import-untyped]
from smolagents.utils import AgentMaxStepsError  # type: ignore[import-untyped]

from symfonic_otel.invocation import Turn

__all__ = [
    "Call",
    "calls_of",
    "is_cap_step",
    "model_raised",
    "seconds_ns",
    "text_of",
    "turn_of",
    "usage_of",
]

_MAX_TEXT_CHARS: Final = 65_536
_MAX_PARTS: Final = 256


class Call(NamedTuple):
    """One tool call of a step: its tool's name, its arguments and its id (or None)."""

    name: str
    arguments: object
    call_id: str | None


def _call_id(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def calls_of(step: Any) -> list[Call]:
    """The step's tool calls; a failed step's from its model output (see the module docstring)."""
    calls = getattr(step, "tool_calls", None)
    if isinstance(calls, list) and calls:
        return [
            Call(
                call.name if isinstance(call.name, str) else "",
                getattr(call, "arguments", None),
                _call_id(getattr(call, "id", None)),
            )
            for call in calls[:_MAX_PARTS]
        ]
    if getattr(step, "error", None) is None:
        return []
    requested = getattr(getattr(step, "model_output_message", None), "tool_calls", None)
    if not isinstance(requested, list):
        return []
    found: list[Call] = []
    for call in requested[:_MAX_PARTS]:
        function = getattr(call, "function", None)
        name = getattr(function, "name", None)
        found.append(
            Call(
                name if isinstance(name, str) else "",
                getattr(function, "arguments", None),
                _call_id(getattr(call, "id", None)),
            )
        )
    return found


def text_of(content: object) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content[:_MAX_TEXT_CHARS]
    if not isinstance(content, list):
        return ""
    texts = [
        part["text"]
        for part in content[:_MAX_PARTS]
        if isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
    ]
    return "".join(texts)[:_MAX_TEXT_CHARS]


def turn_of(step: Any) -> Turn:
    """The model turn of an ``ActionStep`` / ``PlanningStep`` (the cap step's is its output)."""
    message = getattr(step, "model_output_message", None)
    text = text_of(getattr(message, "content", None))
    if is_cap_step(step):
        text = text_of(getattr(step, "action_output", None))
    return Turn.read(text, len(calls_of(step)))


def is_cap_step(step: Any) -> bool:
    return isinstance(getattr(step, "error", None), AgentMaxStepsError)


def model_raised(step: Any) -> bool:
    """An ``ActionStep`` recorded with neither a model output nor an error: its model call
    raised, and smolagents is re-raising it (a step that ran always has one or the other)."""
    return (
        isinstance(step, ActionStep)
        and getattr(step, "model_output_message", None) is None
        and getattr(step, "error", None) is None
        and not getattr(step, "is_final_answer", False)
    )


def usage_of(step: Any) -> dict[str, int] | None:
    """The step's token usage; None when the step has none (a model call that failed)."""
    usage = getattr(step, "token_usage", None)
    if usage is None:
        return None
    found: dict[str, int] = {}
    for name in ("input_tokens", "output_tokens"):
        value = getattr(usage, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            found[name] = value
    return found


def seconds_ns(value: object) -> int | None:
    """A ``time.time()`` timestamp in nanoseconds, if it is one."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return int(value * 1e9)
