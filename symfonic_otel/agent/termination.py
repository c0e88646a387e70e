"""When the loop stops: stop-reason normalisation per provider and ``tools_condition``.

``tools_condition`` (not the model node) owns the continue / finish decision. The model node
only records what the provider returned; this module reads it and routes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from symfonic_otel.agent.flatten import message_text

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from symfonic_otel.agent.config import FrameworkConfig

__all__ = [
    "END_TURN",
    "MAX_TOKENS",
    "PAUSE_TURN",
    "REFUSAL",
    "TOOL_USE",
    "Route",
    "RouteAction",
    "RouteReason",
    "finishes_on_text_with_tool_calls",
    "incomplete_reason",
    "normalize_stop_reason",
    "raw_stop_reason",
    "reported_stop_reason",
    "stop_reasons",
    "stop_vocabulary",
    "tool_call_signature",
    "tools_condition",
]

END_TURN: Final = "end_turn"
MAX_TOKENS: Final = "max_tokens"
TOOL_USE: Final = "tool_use"
REFUSAL: Final = "refusal"
PAUSE_TURN: Final = "pause_turn"

# Each provider's own vocabulary, matched exactly (case matters: Gemini's ``STOP`` is not
# OpenAI's ``stop``). A value outside its provider's table passes through verbatim, so a new or
# unusual stop reason (``stop_sequence``, ``pause_turn``, ``eos``...) stays visible.
_OPENAI: Final[Mapping[str, str]] = {
    "stop": END_TURN,
    "length": MAX_TOKENS,
    "tool_calls": TOOL_USE,
    "content_filter": REFUSAL,
}
# The OpenAI Responses API has no finish reason: a cut response says ``status: incomplete``
# and why in ``incomplete_details``.
_RESPONSES_INCOMPLETE: Final[Mapping[str, str]] = {
    "max_output_tokens": MAX_TOKENS,
    "content_filter": REFUSAL,
}
_ANTHROPIC: Final[Mapping[str, str]] = {v: v for v in (END_TURN, MAX_TOKENS, TOOL_USE, REFUSAL)}
# langchain-google-genai writes the FinishReason enum name. STOP is also what Gemini reports on
# function-call turns, which is why the text-with-tool-calls rule never applies to it. The three
# refusal values are the ones the adapter itself turns into refusal blocks.
_GEMINI: Final[Mapping[str, str]] = {
    "STOP": END_TURN,
    "MAX_TOKENS": MAX_TOKENS,
    "SAFETY": REFUSAL,
    "PROHIBITED_CONTENT": REFUSAL,
    "BLOCKLIST": REFUSAL,
}
# Ollama's native API: ``done_reason`` is ``stop`` on every finished turn, tool calls included.
_OLLAMA: Final[Mapping[str, str]] = {"stop": END_TURN, "length": MAX_TOKENS}

_BY_PROVIDER: Final[Mapping[str, Mapping[str, str]]] = {
    "openai": _OPENAI,
    "azure": _OPENAI,
    "anthropic": _ANTHROPIC,
    "google_genai": _GEMINI,
    "google_vertexai": _GEMINI,
    "ollama": _OLLAMA,
}
# Without a ``model_provider`` the key the adapter wrote tells the API family: OpenAI-compatible
# gateways write ``finish_reason``, Anthropic ``stop_reason``, Bedrock Converse ``stopReason``
# (whose shared values are Anthropic's), Ollama ``done_reason``.
_BY_KEY: Final[tuple[tuple[str, Mapping[str, str]], ...]] = (
    ("finish_reason", _OPENAI),
    ("stop_reason", _ANTHROPIC),
    ("stopReason", _ANTHROPIC),
    ("done_reason", _OLLAMA),
)
# Providers documented to end a turn with text AND tool calls and a "turn complete" stop value,
# meaning the text is the answer (qwen3-max on DashScope, seed 000); matched in model / provider
# names. Providers that report "stop" on every tool-call turn must never match.
_TEXT_WITH_CALLS_FINISHES: Final = ("qwen", "dashscope", "tongyi")
_RUN_TOOLS_PROVIDERS: Final = frozenset({"google_genai", "google_vertexai", "ollama"})

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


def _metadata(message: Any) -> Mapping[str, Any]:
    metadata = getattr(message, "response_metadata", None)
    return metadata if isinstance(metadata, Mapping) else {}


def _provider(metadata: Mapping[str, Any]) -> str:
    provider = metadata.get("model_provider")
    return provider.lower() if isinstance(provider, str) else ""


def _raw(metadata: Mapping[str, Any]) -> tuple[str, str] | None:
    for key, _ in _BY_KEY:
        value = metadata.get(key)
        if isinstance(value, str) and value:
            return key, value
    return None


def incomplete_reason(metadata: Mapping[str, Any]) -> str | None:
    """Why an OpenAI Responses API response stopped short (``max_output_tokens``,
    ``content_filter``), from its ``response_metadata``; None unless it is incomplete."""
    if metadata.get("status") != "incomplete":
        return None
    details = metadata.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, Mapping) else None
    return reason if isinstance(reason, str) and reason else "incomplete"


def raw_stop_reason(message: Any) -> str | None:
    """The provider's own stop value from ``response_metadata`` (a Responses API cut: why it is
    incomplete), or ``None`` (bare EOF)."""
    metadata = _metadata(message)
    found = _raw(metadata)
    return found[1] if found is not None else incomplete_reason(metadata)


def stop_vocabulary(message: Any) -> Mapping[str, str]:
    """The table that normalises this message's stop value: by provider, else by metadata key."""
    metadata = _metadata(message)
    return _vocabulary(metadata, _raw(metadata))


def _vocabulary(metadata: Mapping[str, Any], found: tuple[str, str] | None) -> Mapping[str, str]:
    table = _BY_PROVIDER.get(_provider(metadata))
    if table is not None:
        return table
    if found is not None:
        for key, by_key in _BY_KEY:
            if key == found[0]:
                return by_key
    return {}


def normalize_stop_reason(message: Any) -> str | None:
    """``end_turn``, ``max_tokens``, ``tool_use``, ``refusal``, another value verbatim, or None.

    Each provider's own vocabulary maps to the four values (OpenAI ``stop`` / ``length`` /
    ``tool_calls`` / ``content_filter``, Anthropic's own four, Gemini ``STOP`` / ``MAX_TOKENS``
    / its refusal values, Ollama ``stop`` / ``length``); anything else is returned unchanged. An
    OpenAI refusal (text in ``additional_kwargs["refusal"]``, finish reason ``stop``) counts as
    ``refusal``.
    """
    return stop_reasons(message)[1]


def stop_reasons(message: Any) -> tuple[str | None, str | None]:
    """(``raw_stop_reason``, ``normalize_stop_reason``) of a message, its metadata read once
    (this is on every model call's path)."""
    metadata = _metadata(message)
    found = _raw(metadata)
    raw = found[1] if found is not None else None
    extra = getattr(message, "additional_kwargs", None)
    if extra and isinstance(extra, Mapping) and extra.get("refusal") and raw in (None, "stop"):
        return raw, REFUSAL
    if found is None:
        cut = incomplete_reason(metadata)
        return cut, _RESPONSES_INCOMPLETE.get(cut, cut) if cut is not None else None
    return raw, _vocabulary(metadata, found).get(found[1], found[1])


def reported_stop_reason(stop_reason: str | None, has_tool_calls: bool) -> str:
    """Stop reason for ``AgentResponse``: a missing one is inferred from the turn's shape."""
    if stop_reason is not None:
        return stop_reason
    return TOOL_USE if has_tool_calls else END_TURN


def finishes_on_text_with_tool_calls(
    message: Any, setting: str = "auto", *, model_hints: Iterable[str] = ()
) -> bool:
    """Does text + tool calls + a turn-complete stop mean "this text is the answer" here?

    ``always`` / ``never`` decide outright. ``auto`` says yes only for the providers documented
    to end turns that way (qwen / DashScope), recognised from the model and provider names in
    the message and in ``model_hints`` (the chat model's configured name and endpoint); never
    for providers that report a turn-complete value on every tool-call turn (Gemini, Ollama).
    """
    if setting == "always":
        return True
    if setting != "auto":
        return False
    metadata = _metadata(message)
    provider = _provider(metadata)
    if provider in _RUN_TOOLS_PROVIDERS or "done_reason" in metadata:  # Ollama's native key
        return False
    names = [provider, *(metadata.get(key) for key in ("model_name", "model")), *model_hints]
    return any(
        marker in name.lower()
        for name in names
        if isinstance(name, str)
        for marker in _TEXT_WITH_CALLS_FINISHES
    )


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
    run_start: int = 0,
    model_hints: Iterable[str] = (),
) -> Route:
    """Route after the model turn ``messages[-1]``; ``model_calls`` made so far in the run.

    Finish on: no tool calls; a turn carrying text and tool calls with a turn-complete stop from
    a provider that ends turns that way (``finish_on_text_with_tool_calls``); the same
    ``name:args`` signature seen ``loop_detection_threshold`` times in the last
    ``loop_detection_window`` messages of the current run (``messages[run_start:]``: history the
    run was given does not count); ``recursion_limit`` model calls made. A turn without a stop
    reason is terminal iff it has no tool calls. Below the call cap, a text answer cut at
    ``max_tokens`` is continued (at most ``max_length_recoveries`` times in a row) and a paused
    turn (Anthropic ``pause_turn``) is resumed.
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
    if (
        stop == END_TURN
        and (message_text(message) or "").strip()
        and finishes_on_text_with_tool_calls(
            message, config.finish_on_text_with_tool_calls, model_hints=model_hints
        )
    ):
        return Route("finish", "end_turn_with_text", stop)
    if _loop_detected(messages[run_start:], calls, config):
        return Route("finish", "loop_detected", stop)
    if model_calls >= config.recursion_limit:
        return Route("finish", "recursion_limit", stop)
    return Route("tools", "tool_calls", stop)
