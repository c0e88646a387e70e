"""Guarded readers of LangChain payloads: run inputs and outputs, model results, metadata.

Every function here takes whatever a callback was given and returns plain, bounded values:
wrong types give the "unknown" default rather than an exception, and every caller-supplied
string the adapter keeps between a start and its end is capped, so the adapter's state stays
bounded in bytes whatever the input (the core handler sanitises what reaches telemetry).
Reading an object whose attributes themselves raise is the one failure left to the callers'
guards, which then record the call with what is known.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from uuid import UUID

from symfonic_otel.agent.flatten import flatten_content_blocks
from symfonic_otel.agent.termination import raw_stop_reason
from symfonic_otel.langchain import provider_shapes as shapes
from symfonic_otel.langchain.messages import (
    MAX_STOP_REASON,
    AIShape,
    ai_message,
    message_content,
    message_list,
    message_role,
    metadata_view,
)
from symfonic_otel.read.content import MAX_CONTENT_CHARS
from symfonic_otel.read.extract import Usage, usage_of

__all__ = [
    "NO_CALL_FIELDS",
    "AIShape",
    "CallFields",
    "FinalOutput",
    "LLMOutput",
    "RunKey",
    "bounded",
    "call_fields",
    "final_output",
    "llm_output",
    "model_name",
    "query",
    "run_id_text",
    "run_key",
    "tenant",
]

RunKey = int | str
"""What the adapter keys its state by: LangChain's run UUID as its 128-bit integer (hashed in C,
where a ``UUID`` hashes in Python on every lookup), or a bounded string for other ids."""

# Longest name / id / tenant kept between a start and its end. Model, node, tool and provider
# names are far shorter in practice; the core caps and sanitises again for telemetry.
MAX_NAME: Final = 256
_MAX_KEY: Final = 128
# How deep and how wide ``_is_blank_value`` looks into a structured result before calling it
# non-blank: enough for real outputs, bounded for pathological ones.
_BLANK_DEPTH: Final = 4
_BLANK_WIDTH: Final = 64
_HUMAN_ROLES: Final = frozenset({"human", "user"})
# LangGraph's channel for ``response_format`` answers (``create_react_agent``).
_STRUCTURED_RESPONSE: Final = "structured_response"


def bounded(value: object, limit: int = MAX_NAME) -> str | None:
    """A non-empty string cut to ``limit`` characters; None for anything else."""
    return value[:limit] if isinstance(value, str) and value else None


def run_key(run_id: object) -> RunKey | None:
    """The state key of a run id: a UUID's integer, else a string of at most ~128 characters.

    A long id keeps a prefix and a digest of the whole, so distinct ids stay distinct while the
    adapter (and the run id attribute the core records) stays small.
    """
    if isinstance(run_id, UUID):
        return run_id.int
    if run_id is None:
        return None
    text = run_id if isinstance(run_id, str) else str(run_id)
    if len(text) <= _MAX_KEY:
        return text
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return f"{text[:64]}~{digest}"


def run_id_text(key: RunKey) -> str:
    """The run id the core records: a UUID's canonical text (formatted here), else the key."""
    if not isinstance(key, int):
        return key
    digits = f"{key:032x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


# --- a run's input ---------------------------------------------------------------------------


def query(inputs: object) -> str:
    """A run's input as text: its last human message, a prompt's variables (JSON) or ""."""
    if isinstance(inputs, str):
        return inputs
    messages = message_list(inputs)
    if messages is not None:
        for message in reversed(messages):
            if isinstance(message, str):
                return message
            if message_role(message).lower() in _HUMAN_ROLES:
                return flatten_content_blocks(message_content(message)) or ""
        return ""
    if isinstance(inputs, Mapping) and inputs:
        for key in ("input", "query", "question"):
            value = inputs.get(key)
            if isinstance(value, str):
                return value
        if len(inputs) == 1:  # a prompt template with one variable, whatever its name
            only = next(iter(inputs.values()))
            if isinstance(only, str):
                return only
        return _render(inputs)  # the template's variables, as JSON
    return ""


# --- a run's final output ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FinalOutput:
    """The verdict on a top-level run's result."""

    answered: bool | None
    """True: a non-blank answer; False: known blank; None: unknown (nothing to judge)."""
    text: str | None
    """The answer as text, for content capture (``""`` when not rendered)."""
    bail: AIShape | None = None
    """Set when the result is a message-list state ending in an AI message without text."""
    ai: AIShape | None = None
    """The AI message the result ends on, if any (its stop reason is the run's exit)."""


UNKNOWN_OUTPUT: Final = FinalOutput(None, None)


def final_output(outputs: object, *, render: bool) -> FinalOutput:
    """Judge a run's output: only an AI message without text is an empty answer.

    A message-list state (what a LangGraph agent returns) is judged by its last message, unless
    LangGraph's ``structured_response`` holds the answer; a bare AI message by its text; a
    string by its text, AgentExecutor's ``{"output": ...}`` by that string; anything else (dict
    state, parsed JSON, a Pydantic object, a list, a number) is an answer unless every value in
    it is blank. ``render``: turn non-text answers into JSON text for content capture.
    """
    messages = message_list(outputs)
    if messages:
        found = ai_message(messages[-1])
        if found is None:
            text = flatten_content_blocks(message_content(messages[-1])) or ""
            return FinalOutput(True, text)
        shape, text, _ = found
        if not shape.blank:
            return FinalOutput(True, text, ai=shape)
        structured = outputs.get(_STRUCTURED_RESPONSE) if isinstance(outputs, Mapping) else None
        if not _is_blank_value(structured, 0):
            return FinalOutput(True, _render(structured) if render else "", ai=shape)
        return FinalOutput(False, "", bail=shape, ai=shape)
    found = ai_message(outputs)
    if found is not None:
        shape, text, _ = found
        return FinalOutput(not shape.blank, text, ai=shape)
    if outputs is None:
        return UNKNOWN_OUTPUT
    if isinstance(outputs, str):
        return FinalOutput(bool(outputs.strip()), outputs)
    if isinstance(outputs, Mapping):
        output = outputs.get("output")
        if isinstance(output, str):
            return FinalOutput(bool(output.strip()), output)
    answered = not _is_blank_value(outputs, 0)
    return FinalOutput(answered, _render(outputs) if render and answered else "")


def _is_blank_value(value: object, depth: int) -> bool:
    """None, a blank string, or a container of only blank values (looked at boundedly)."""
    if value is None:
        return True
    if isinstance(value, str | bytes):
        return not value.strip()
    if depth >= _BLANK_DEPTH:
        return False
    if isinstance(value, Mapping):
        items: Any = value.values()
    elif isinstance(value, list | tuple | set | frozenset):
        items = value
    else:
        return False  # numbers, booleans, parsed objects: an answer
    if len(items) > _BLANK_WIDTH:
        return False
    return all(_is_blank_value(item, depth + 1) for item in items)


def _render(value: object) -> str:
    """JSON text of a structured answer, one character past the capture limit at most."""
    try:
        dump = getattr(value, "model_dump", None)  # Pydantic
        data = dump(mode="json") if callable(dump) else value
        text = json.dumps(data, ensure_ascii=False, default=str)
    except Exception:
        text = repr(value)
    return text[: MAX_CONTENT_CHARS + 1]


# --- model calls ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LLMOutput:
    """What the adapter reads of a model call's ``LLMResult`` for the core's call record."""

    text: str
    shape: AIShape | None
    usage: Usage
    stop_reason: str | None
    """The provider's raw value (``stop``, ``tool_use``, ``STOP``...)."""

    @property
    def usage_reported(self) -> bool:
        """Whether the provider reported token counts (without them the cost is unknown)."""
        return self.usage.input_tokens is not None or self.usage.output_tokens is not None


NO_USAGE: Final = Usage(None, None)  # shared by calls without usage: never mutated
EMPTY_LLM_OUTPUT: Final = LLMOutput("", None, NO_USAGE, None)


def _first_generation(response: object) -> object:
    generations = getattr(response, "generations", None)
    if isinstance(generations, list) and generations:
        first = generations[0]
        if isinstance(first, list) and first:
            return first[0]
    return None


def llm_output(response: object) -> LLMOutput:
    """Text, AI message shape, token usage and raw stop reason of an ``LLMResult``."""
    generation = _first_generation(response)
    message = getattr(generation, "message", None)
    found = ai_message(message) if message is not None else None
    shape: AIShape | None = None
    stop: str | None = None
    if found is not None:
        shape, text, stop = found
    else:
        raw = getattr(generation, "text", "")
        text = raw if isinstance(raw, str) else ""
        stop = raw_stop_reason(metadata_view(message)) if message is not None else None
    if stop is None:  # completion models report it per generation
        info = getattr(generation, "generation_info", None)
        value = info.get("finish_reason") if isinstance(info, Mapping) else None
        stop = value if isinstance(value, str) and value else None
    stop = stop or shapes.incomplete_reason(message)
    stop = stop[:MAX_STOP_REASON] if stop is not None else None
    usage = NO_USAGE
    usage_metadata = getattr(message, "usage_metadata", None)
    if isinstance(usage_metadata, Mapping) and usage_metadata:
        usage = shapes.with_cache_write_split(usage_of(usage_metadata), usage_metadata)
    else:
        llm_out = getattr(response, "llm_output", None)
        if isinstance(llm_out, Mapping):
            for key in ("token_usage", "usage"):
                found_usage = llm_out.get(key)
                if isinstance(found_usage, Mapping) and found_usage:
                    usage = usage_of(found_usage)
                    break
    return LLMOutput(text, shape, usage, stop)


@dataclass(frozen=True, slots=True)
class CallFields:
    """What a model call's start callback says about it (all bounded)."""

    model: str = ""
    provider: str | None = None
    node: str = ""
    tenant: str | None = None


NO_CALL_FIELDS: Final = CallFields()


def call_fields(metadata: Mapping[str, Any], kwargs: Mapping[str, Any]) -> CallFields:
    return CallFields(
        model=model_name(metadata, kwargs),
        provider=shapes.semconv_provider(bounded(metadata.get("ls_provider"))),
        node=bounded(metadata.get("langgraph_node")) or "",
        tenant=bounded(metadata.get("tenant_id")),
    )


def model_name(metadata: Mapping[str, Any], kwargs: Mapping[str, Any]) -> str:
    """``ls_model_name`` metadata, else the invocation params' ``model`` / ``model_name``."""
    name = bounded(metadata.get("ls_model_name"))
    if name:
        return name
    params = kwargs.get("invocation_params")
    if isinstance(params, Mapping):
        for key in ("model", "model_name", "model_id", "deployment_name"):
            name = bounded(params.get(key))
            if name:
                return name
    return ""


def tenant(metadata: Mapping[str, Any]) -> str | None:
    """The run's ``metadata["tenant_id"]`` (the core sanitises and ranks it)."""
    return bounded(metadata.get("tenant_id"))
