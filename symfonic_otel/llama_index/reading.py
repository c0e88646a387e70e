"""What the adapter reads from LlamaIndex's payloads, by structure only (types and fields).

A chat response's text, tool-call count and usage; an agent step's output (``AgentOutput``:
the turn the agent parsed, its tool calls); the run's step budget from its start event.
"""

from __future__ import annotations

from typing import Any, Final

from llama_index.core.agent.workflow.base_agent import DEFAULT_MAX_ITERATIONS
from llama_index.core.base.llms.types import ToolCallBlock

from symfonic_otel.invocation import Turn

__all__ = ["budget_of", "model_of", "response_turn", "step_turn", "usage_of"]

_MAX_TEXT_CHARS: Final = 65_536
_MAX_BLOCKS: Final = 256


def _text(message: Any) -> str:
    content = getattr(message, "content", None)
    return content[:_MAX_TEXT_CHARS] if isinstance(content, str) else ""


def response_turn(response: Any) -> Turn:
    """A ``ChatResponse``: its message's text and its tool-call blocks (or the provider's
    ``tool_calls`` in ``additional_kwargs``)."""
    message = getattr(response, "message", None)
    blocks = getattr(message, "blocks", None)
    calls = 0
    if isinstance(blocks, list):
        calls = sum(isinstance(block, ToolCallBlock) for block in blocks[:_MAX_BLOCKS])
    extra = getattr(message, "additional_kwargs", None)
    if not calls and isinstance(extra, dict) and isinstance(extra.get("tool_calls"), list):
        calls = len(extra["tool_calls"])
    return Turn.read(_text(message), calls)


def step_turn(output: Any) -> Turn:
    """An ``AgentOutput``: the turn as the agent parsed it (a ReAct agent's tool calls come
    from the text, so the response's own blocks do not show them)."""
    calls = getattr(output, "tool_calls", None)
    return Turn.read(
        _text(getattr(output, "response", None)), len(calls) if isinstance(calls, list) else 0
    )


def usage_of(response: Any) -> dict[str, int]:
    """Token counts from the provider's raw response (``usage`` object or mapping), if any."""
    raw = getattr(response, "raw", None)
    usage = raw.get("usage") if isinstance(raw, dict) else getattr(raw, "usage", None)
    found: dict[str, int] = {}
    for ours, names in (
        ("input_tokens", ("input_tokens", "prompt_tokens")),
        ("output_tokens", ("output_tokens", "completion_tokens")),
    ):
        for name in names:
            value = usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                found[ours] = value
                break
    return found


def budget_of(start_event: Any) -> int:
    """The run's ``max_iterations`` (the start event's, else LlamaIndex's default)."""
    getter = getattr(start_event, "get", None)
    value = getter("max_iterations", None) if callable(getter) else None
    return value if isinstance(value, int) and value > 0 else DEFAULT_MAX_ITERATIONS


def model_of(payload: object) -> str:
    """The model of an ``LLMChatStartEvent``'s ``model_dict`` (the LLM's metadata: its
    ``model_name``, which LlamaIndex defaults to ``unknown``)."""
    if not isinstance(payload, dict):
        return ""
    for key in ("model_name", "model"):
        value = payload.get(key)
        if isinstance(value, str) and value and value != "unknown":
            return value
    return ""
