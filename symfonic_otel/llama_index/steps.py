"""What only LlamaIndex records about a run: its iteration budget and count, the step that
found the budget spent, and its model calls between their start and end events.

A run's spans are indexed by the invocation layer with their step (the ancestor right under the
run span) and parent, so that a model call knows which step made it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Call", "Steps"]


@dataclass(slots=True)
class Call:
    """A model call between its LLMChatStart and LLMChatEnd."""

    start_ns: int
    start_monotonic: float
    model: str
    fallback: bool
    first_chunk_s: float | None = None


@dataclass(slots=True)
class Steps:
    """The workflow's own count: ``parse_agent_output`` steps against ``max_iterations``."""

    budget: int
    parses: int = 0
    cap_step: str | None = None  # the step that found the budget spent
    pending: dict[str, Call] = field(default_factory=dict)  # model span id -> call
    streamed: set[str] = field(default_factory=set)  # ended model spans whose stream goes on
