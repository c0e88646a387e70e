"""Step-cap errors: the exceptions frameworks raise when a run's step budget runs out.

One list, read by the LangChain handler (by class, among modules already imported) and by the
span processor (by type name on a span: ``error.type`` or an exception event's
``exception.type``, last dotted part), and rendered into the docs' table, which a test checks.
A framework added later adds its budget error here, one entry. Never matched by message text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["STEP_CAP_ERRORS", "STEP_CAP_ERROR_TYPES", "StepCapError", "is_step_cap_type"]


@dataclass(frozen=True, slots=True)
class StepCapError:
    """A framework's exception for a step budget that ran out: a silent bail, by type."""

    framework: str  # as the docs name it
    module: str  # where the class is defined
    name: str  # the class name
    raised_when: str  # one line for the docs table


# Every step-cap error the LangChain handler and the span processor know, in one list (the
# docs' table is checked against it): add a framework's budget error here, one line.
STEP_CAP_ERROR_TYPES: Final = (
    StepCapError(
        "LangGraph", "langgraph.errors", "GraphRecursionError", "a graph reaches `recursion_limit`"
    ),
    StepCapError(
        "LangChain `create_agent`",
        "langchain.agents.middleware.model_call_limit",
        "ModelCallLimitExceededError",
        '`ModelCallLimitMiddleware(exit_behavior="error")` reaches its limit',
    ),
    StepCapError(
        "LangChain `create_agent`",
        "langchain.agents.middleware.tool_call_limit",
        "ToolCallLimitExceededError",
        '`ToolCallLimitMiddleware(exit_behavior="error")` reaches its limit',
    ),
    StepCapError(
        "OpenAI Agents SDK", "agents.exceptions", "MaxTurnsExceeded", "a run reaches `max_turns`"
    ),
    StepCapError(
        "Pydantic AI",
        "pydantic_ai.exceptions",
        "UsageLimitExceeded",
        "a run reaches a `UsageLimits` limit (e.g. `request_limit`)",
    ),
)
STEP_CAP_ERRORS: Final = frozenset(error.name for error in STEP_CAP_ERROR_TYPES)


def is_step_cap_type(value: object) -> bool:
    """Whether a recorded exception type (``pkg.module.Name`` or ``Name``) is a step cap."""
    return isinstance(value, str) and value.rsplit(".", 1)[-1] in STEP_CAP_ERRORS
