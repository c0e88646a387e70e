"""Typed events yielded by ``ReactAgent.stream``: text deltas, tool calls, tool results, the end."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from symfonic_otel.agent.response import AgentResponse

__all__ = ["StreamEvent", "StreamFinal", "StreamTextDelta", "StreamToolCall", "StreamToolResult"]


@dataclass(frozen=True, slots=True)
class StreamTextDelta:
    """A piece of model text as it arrived; ``iteration_index`` is the model call it belongs to."""

    text: str
    iteration_index: int


@dataclass(frozen=True, slots=True)
class StreamToolCall:
    """The loop is about to run this tool call."""

    id: str
    name: str
    args: dict[str, Any]
    iteration_index: int


@dataclass(frozen=True, slots=True)
class StreamToolResult:
    """A tool call finished; ``is_error`` when the tool raised or was unknown."""

    id: str
    name: str
    content: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class StreamFinal:
    """The run ended: the same ``AgentResponse`` that ``run`` returns (never synthesised)."""

    response: AgentResponse

    @property
    def final_response(self) -> str:
        return self.response.final_response


StreamEvent = StreamTextDelta | StreamToolCall | StreamToolResult | StreamFinal
