"""What the adapter reads from smolagents' memory steps, by structure only (types and fields).

A step's model turn (text, tool calls, token usage, timing) and whether it is the step
smolagents appends when ``max_steps`` ran out: an ``ActionStep`` whose ``error`` is an
``AgentMaxStepsError``, holding the forced final-answer call's output and usage.
"""

from __future__ import annotations

from typing import Any, Final

from smolagents.utils import AgentMaxStepsError  # type: ignore[import-untyped]

from symfonic_otel.read.turns import Turn

__all__ = ["is_cap_step", "seconds_ns", "text_of", "turn_of", "usage_of"]

_MAX_TEXT_CHARS: Final = 65_536
_MAX_PARTS: Final = 256


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
    calls = getattr(step, "tool_calls", None)
    return Turn(text, len(calls) if isinstance(calls, list) else 0)


def is_cap_step(step: Any) -> bool:
    return isinstance(getattr(step, "error", None), AgentMaxStepsError)


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
