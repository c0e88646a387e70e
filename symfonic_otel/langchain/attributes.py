"""Guarded readers of what LangChain says about a call beyond its result: span attributes.

Request parameters (from the model's ``ls_*`` metadata, then its invocation params), response
id and model, reasoning tokens, the conversation a run belongs to, the name a run was given, a
tool's own error report. Each returns plain, bounded, encodable values (no content: that is
``messages``), read once per call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.langchain.extract import MAX_NAME, bounded

__all__ = [
    "agent_name",
    "conversation_id",
    "is_graph_node",
    "request_attributes",
    "response_attributes",
    "tool_failed",
]

Attributes = dict[str, AttributeValue]

# Invocation-param key -> (attribute, is an integer). Provider spellings of one parameter map to
# the same attribute; the model's ``ls_*`` metadata, where set, wins over all of them.
_PARAMS: Final[dict[str, tuple[str, bool]]] = {
    "temperature": (semconv.GEN_AI_REQUEST_TEMPERATURE, False),
    "top_p": (semconv.GEN_AI_REQUEST_TOP_P, False),
    "topP": (semconv.GEN_AI_REQUEST_TOP_P, False),
    "top_k": (semconv.GEN_AI_REQUEST_TOP_K, False),
    "topK": (semconv.GEN_AI_REQUEST_TOP_K, False),
    "frequency_penalty": (semconv.GEN_AI_REQUEST_FREQUENCY_PENALTY, False),
    "presence_penalty": (semconv.GEN_AI_REQUEST_PRESENCE_PENALTY, False),
    "max_tokens": (semconv.GEN_AI_REQUEST_MAX_TOKENS, True),
    "max_completion_tokens": (semconv.GEN_AI_REQUEST_MAX_TOKENS, True),
    "max_output_tokens": (semconv.GEN_AI_REQUEST_MAX_TOKENS, True),
    "num_predict": (semconv.GEN_AI_REQUEST_MAX_TOKENS, True),
    "seed": (semconv.GEN_AI_REQUEST_SEED, True),
    "random_seed": (semconv.GEN_AI_REQUEST_SEED, True),
}
_METADATA: Final = (
    ("ls_temperature", semconv.GEN_AI_REQUEST_TEMPERATURE, False),
    ("ls_max_tokens", semconv.GEN_AI_REQUEST_MAX_TOKENS, True),
)
_STOP_KEYS: Final = ("stop", "stop_sequences")
_MAX_STOP_SEQUENCES: Final = 16
_MAX_STOP_CHARS: Final = 256
# A conversation is a LangGraph thread, or what LangSmith and others call a session.
_CONVERSATION_KEYS: Final = ("thread_id", "session_id", "conversation_id")
# Names LangChain gives runs nobody named: not an agent name.
_DEFAULT_NAMES: Final = semconv.DEFAULT_RUN_NAMES
# Ids LangChain makes up when the provider sent none (``lc_run--<uuid>``, older ``run-<uuid>``).
_LOCAL_ID_PREFIXES: Final = ("lc_run-", "run-")
_INT64_MAX: Final = 2**63 - 1


def _number(raw: object) -> float | None:
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None
    number = float(raw)
    return number if math.isfinite(number) else None


def _integer(raw: object) -> int | None:
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= _INT64_MAX:
        return None
    return raw


def _stop_sequences(raw: object) -> tuple[str, ...] | None:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list | tuple) or not raw:
        return None
    stops = tuple(s[:_MAX_STOP_CHARS] for s in raw[:_MAX_STOP_SEQUENCES] if isinstance(s, str))
    return stops or None


def request_attributes(
    metadata: Mapping[str, Any], params: Mapping[str, Any], options: Mapping[str, Any]
) -> Attributes:
    """``gen_ai.request.*`` of a model call: what the caller asked for, when it said.

    One pass over the (small) invocation params, then the ``ls_*`` metadata on top.
    """
    attributes: Attributes = {}
    for key, raw in params.items():
        known = _PARAMS.get(key)
        if known is None or raw is None:
            continue
        attribute, integer = known
        found = _integer(raw) if integer else _number(raw)
        if found is not None and attribute not in attributes:
            attributes[attribute] = found
    for key, attribute, integer in _METADATA:
        raw = metadata.get(key)
        found = (_integer(raw) if integer else _number(raw)) if raw is not None else None
        if found is not None:
            attributes[attribute] = found
    stops = _stop_sequences(options.get("stop"))
    for key in _STOP_KEYS:
        if stops is not None:
            break
        stops = _stop_sequences(params.get(key))
    if stops is None:
        stops = _stop_sequences(metadata.get("ls_stop"))
    if stops is not None:
        attributes[semconv.GEN_AI_REQUEST_STOP_SEQUENCES] = stops
    choices = _integer(params.get("n"))
    if choices is not None and choices != 1:
        attributes[semconv.GEN_AI_REQUEST_CHOICE_COUNT] = choices
    return attributes


def response_attributes(response: object) -> Attributes:
    """``gen_ai.response.id`` / ``.model`` and reasoning tokens of an ``LLMResult``."""
    attributes: Attributes = {}
    generations = getattr(response, "generations", None)
    first = generations[0][0] if generations and generations[0] else None
    message = getattr(first, "message", None)
    metadata = getattr(message, "response_metadata", None)
    metadata = metadata if isinstance(metadata, Mapping) else {}
    llm_output = getattr(response, "llm_output", None)
    llm_output = llm_output if isinstance(llm_output, Mapping) else {}

    response_id = bounded(metadata.get("id"))
    if response_id is None:
        own = bounded(getattr(message, "id", None))
        response_id = None if own is None or own.startswith(_LOCAL_ID_PREFIXES) else own
    if response_id is not None:
        attributes[semconv.GEN_AI_RESPONSE_ID] = response_id
    for source, key in ((metadata, "model_name"), (metadata, "model"), (llm_output, "model_name")):
        model = bounded(source.get(key))
        if model is not None:
            attributes[semconv.GEN_AI_RESPONSE_MODEL] = model
            break
    usage = getattr(message, "usage_metadata", None)
    details = usage.get("output_token_details") if isinstance(usage, Mapping) else None
    reasoning = _integer(details.get("reasoning")) if isinstance(details, Mapping) else None
    if reasoning:
        attributes[semconv.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = reasoning
    return attributes


def conversation_id(metadata: Mapping[str, Any]) -> str | None:
    """LangGraph's ``thread_id`` (copied from ``configurable`` into the run's metadata), else a
    ``session_id`` / ``conversation_id`` the caller put in the metadata."""
    for key in _CONVERSATION_KEYS:
        raw = metadata.get(key)
        if isinstance(raw, int) and not isinstance(raw, bool):
            raw = str(raw)
        found = bounded(raw)
        if found is not None:
            return found
    return None


def agent_name(name: object, serialized: object) -> str | None:
    """A run name somebody chose (``run_name``, a named graph), not LangChain's default."""
    found = bounded(name, MAX_NAME)
    if found is None or found in _DEFAULT_NAMES:
        return None
    if isinstance(serialized, Mapping):
        ids = serialized.get("id")
        if isinstance(ids, list) and ids and ids[-1] == found:  # the class name: a default
            return None
    return found


def is_graph_node(name: object, tags: object, metadata: Mapping[str, Any]) -> bool:
    """The run LangGraph makes for one node of a graph (named after the node, tagged its step)."""
    if not isinstance(name, str) or metadata.get("langgraph_node") != name:
        return False
    return isinstance(tags, list) and any(
        isinstance(tag, str) and tag.startswith("graph:step:") for tag in tags
    )


def tool_failed(output: object) -> bool:
    """A tool that caught its own error and said so: ``ToolMessage(status="error")`` (also
    inside a LangGraph ``Command`` update)."""
    if getattr(output, "status", None) == "error" and getattr(output, "type", None) == "tool":
        return True
    update = getattr(output, "update", None)
    messages = update.get("messages") if isinstance(update, Mapping) else None
    if isinstance(messages, list | tuple):
        return any(
            getattr(m, "status", None) == "error" and getattr(m, "type", None) == "tool"
            for m in messages[:64]
        )
    return False
