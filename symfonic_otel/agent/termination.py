"""When the loop stops: stop-reason normalisation and ``tools_condition``.

``tools_condition`` (not the model node) owns the continue / finish decision. The model node
only records what the provider returned; this module reads it and routes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from symfonic_otel.agent.flatten import message_text

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from symfonic_otel.agent.config import FrameworkConfig

__all__ = [
    "END_TURN",
    "MAX_TOKENS",
    "REFUSAL",
    "TOOL_USE",
    "Route",
    "RouteAction",
    "RouteReason",
    "normalize_stop_reason",
    "raw_stop_reason",
    "reported_stop_reason",
    "tool_call_signature",
    "tools_condition",
]

END_TURN: Final = "end_turn"
MAX_TOKENS: Final = "max_tokens"
TOOL_USE: Final = "tool_use"
REFUSAL: Final = "refusal"
PAUSE_TURN: Final = "pause_turn"

# Provider vocabularies (OpenAI finish_reason, Anthropic stop_reason, Bedrock Converse
# stopReason, Gemini finish_reason, Ollama done_reason), matched case-insensitively.
_NORMALISED: Final[Mapping[str, str]] = {
    # OpenAI and OpenAI-compatible
    "stop": END_TURN,
    "length": MAX_TOKENS,
    "tool_calls": TOOL_USE,
    "function_call": TOOL_USE,
    "content_filter": REFUSAL,
    # Anthropic (and Bedrock Converse, which shares most of it)
    "end_turn": END_TURN,
    "stop_sequence": END_TURN,
    "max_tokens": MAX_TOKENS,
    "tool_use": TOOL_USE,
    "refusal": REFUSAL,
    "guardrail_intervened": REFUSAL,
    "content_filtered": REFUSAL,
    # Gemini
    "safety": REFUSAL,
    "recitation": REFUSAL,
    "prohibited_content": REFUSAL,
    "blocklist": REFUSAL,
    "spii": REFUSAL,
}
_STOP_KEYS: Final = ("finish_reason", "stop_reason", "stopReason", "done_reason")

RouteAction = Literal["tools", "continue_answer", "resume", "finish"]
RouteReason = Literal[
    "tool_calls",
    "no_tool_calls",
    "end_turn_with_text",
    "loop_detected",
    "recursion_limit",
    "max_tokens",
    "pause_turn",
]


@dataclass(frozen=True, slots=True)
class Route:
    """The routing decision after a model turn.

    ``action``: ``tools`` (run the requested tools, then call the model again),
    ``continue_answer`` (the answer was cut at the token limit: ask the model to go on),
    ``resume`` (the provider paused the turn: send the history back as is) or ``finish``.
    ``reason`` names the rule; ``stop_reason`` is the normalised provider stop reason, ``None``
    when the provider sent none.
    """

    action: RouteAction
    reason: RouteReason
    stop_reason: str | None


def raw_stop_reason(message: Any) -> str | None:
    """The provider's own stop value from ``response_metadata``, or ``None`` (bare EOF)."""
    metadata = getattr(message, "response_metadata", None)
    if not isinstance(metadata, Mapping):
        return None
    for key in _STOP_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def normalize_stop_reason(message: Any) -> str | None:
    """``end_turn``, ``max_tokens``, ``tool_use``, ``refusal``, an unknown value verbatim, or None.

    An OpenAI refusal (text in ``additional_kwargs["refusal"]``, finish reason ``stop``) counts
    as ``refusal``.
    """
    raw = raw_stop_reason(message)
    extra = getattr(message, "additional_kwargs", None)
    if isinstance(extra, Mapping) and extra.get("refusal") and (raw is None or raw == "stop"):
        return REFUSAL
    if raw is None:
        return None
    return _NORMALISED.get(raw.lower(), raw)


def reported_stop_reason(stop_reason: str | None, has_tool_calls: bool) -> str:
    """Stop reason for ``AgentResponse``: a missing one is inferred from the turn's shape."""
    if stop_reason is not None:
        return stop_reason
    return TOOL_USE if has_tool_calls else END_TURN


def tool_call_signature(call: Mapping[str, Any]) -> str:
    """``name:args`` with args canonical (sorted keys), so equal calls have equal signatures."""
    args = call.get("args")
    if not isinstance(args, str):
        try:
            args = json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)
        except (TypeError, ValueError):
            args = repr(args)
    return f"{call.get('name')}:{args}"


def _calls(message: Any) -> list[Mapping[str, Any]]:
    calls: list[Mapping[str, Any]] = list(getattr(message, "tool_calls", None) or ())
    invalid = getattr(message, "invalid_tool_calls", None)
    if invalid:
        calls.extend(invalid)
    return calls


def _loop_detected(
    messages: Sequence[BaseMessage], calls: list[Mapping[str, Any]], config: FrameworkConfig
) -> bool:
    wanted = {tool_call_signature(call) for call in calls}
    counts = dict.fromkeys(wanted, 0)
    threshold = config.loop_detection_threshold
    for message in messages[-config.loop_detection_window :]:
        for call in _calls(message):
            signature = tool_call_signature(call)
            if signature in counts:
                counts[signature] += 1
                if counts[signature] >= threshold:
                    return True
    return False


def tools_condition(
    messages: Sequence[BaseMessage],
    config: FrameworkConfig,
    *,
    model_calls: int,
    length_recoveries_used: int = 0,
) -> Route:
    """Route after the model turn ``messages[-1]``; ``model_calls`` made so far in the run.

    Finish on: no tool calls; the provider's ``end_turn`` on a turn carrying text and tool calls
    (the model's answer, as some OpenAI-compatible providers send it); the same ``name:args``
    signature seen ``loop_detection_threshold`` times in the last ``loop_detection_window``
    messages (the current turn included); ``recursion_limit`` model calls made. A turn without a
    stop reason is terminal iff it has no tool calls. Below the call cap, a text answer cut at
    ``max_tokens`` is continued (at most ``max_length_recoveries`` times) and a paused turn
    (Anthropic ``pause_turn``) is resumed.
    """
    message = messages[-1]
    stop = normalize_stop_reason(message)
    calls = _calls(message)
    if not calls:
        if model_calls < config.recursion_limit:
            if stop == PAUSE_TURN:
                return Route("resume", "pause_turn", stop)
            if (
                stop == MAX_TOKENS
                and length_recoveries_used < config.max_length_recoveries
                and (message_text(message) or "").strip()
            ):
                return Route("continue_answer", "max_tokens", stop)
        return Route("finish", "no_tool_calls", stop)
    if stop == END_TURN and (message_text(message) or "").strip():
        return Route("finish", "end_turn_with_text", stop)
    if _loop_detected(messages, calls, config):
        return Route("finish", "loop_detected", stop)
    if model_calls >= config.recursion_limit:
        return Route("finish", "recursion_limit", stop)
    return Route("tools", "tool_calls", stop)
