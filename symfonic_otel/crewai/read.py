"""The CrewAI listener's readers of CrewAI's objects: the executor's state, a response, usage.

The step cap is read from the agent's executor: ``iterations`` (the executor's count) reaching
``max_iter`` is the state in which CrewAI forces a final answer. Readers never raise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from symfonic_otel.invocation import Turn

__all__ = ["executor_reached_cap", "turn_of", "usage_of"]

# Usage keys of CrewAI's providers (OpenAI-style first, then Anthropic-style).
_USAGE_KEYS: Final = (
    ("input_tokens", ("prompt_tokens", "input_tokens")),
    ("output_tokens", ("completion_tokens", "output_tokens")),
)


def executor_reached_cap(agent: Any) -> bool:
    """Whether the agent's executor counted ``max_iter`` iterations (the forced-answer state)."""
    executor = getattr(agent, "agent_executor", None)
    iterations = getattr(executor, "iterations", None)
    max_iter = getattr(executor, "max_iter", None)
    if not isinstance(iterations, int) or not isinstance(max_iter, int) or max_iter < 1:
        return False
    return iterations >= max_iter


def turn_of(response: object) -> Turn:
    """An LLM response's shape: CrewAI's ReAct text (tool use is parsed from it by the
    executor, not here) or a list of native tool calls."""
    if isinstance(response, str):
        return Turn.of([response], 0)
    if isinstance(response, list):
        return Turn.of([], len(response))
    return Turn.of([], 0)


def usage_of(usage: object) -> dict[str, int]:
    if not isinstance(usage, Mapping):
        return {}
    found: dict[str, int] = {}
    for ours, theirs in _USAGE_KEYS:
        for key in theirs:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                found[ours] = value
                break
    return found
