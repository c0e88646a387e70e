"""One finished span of another instrumentation, read into what a run verdict needs.

Only structure is kept: is it an agent run or a model call, did the call end on tool calls,
was its text blank, did the run hit a framework step cap. Message content is read only to tell
blank from non-blank, and never kept: a reading holds flags and short labels, no text.

Each instrumentation names these things its own way; GenAI semantic conventions first, then
OpenInference's and OpenLLMetry's names where they differ. Anything unexpected (a value of the
wrong type, JSON that does not parse, an oversized attribute) reads as "not known", never fails.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry.sdk.trace import Event

from symfonic_otel import semconv
from symfonic_otel.core.loops import signature
from symfonic_otel.read.extract import clean_stop_reason
from symfonic_otel.read.step_caps import is_step_cap_type


class Output(enum.Enum):
    """What a model call (or a run's final output) was, as far as the span says."""

    UNKNOWN = "unknown"  # not recorded (content capture off), or not readable
    TOOL_CALLS = "tool_calls"  # tool calls and no text
    TEXT = "text"  # non-blank text (with or without tool calls)
    BLANK = "blank"  # recorded, and neither text nor tool calls


class Kind(enum.Enum):
    OTHER = "other"
    AGENT = "agent"  # an agent or workflow run (or OpenInference's root chain)
    CHAT = "chat"  # a model call


@dataclass(frozen=True, slots=True)
class SpanReading:
    kind: Kind
    output: Output = Output.UNKNOWN
    finish_reason: str | None = None  # the call's raw finish reason, cleaned (first choice)
    step_cap: bool = False  # the span records a framework step-cap error
    failed: bool = False  # status ERROR, of a run span (only a failed run is an error run)
    # An agent span that names an invocation wherever it sits (GenAI ``invoke_agent``), not a
    # run root only at the top (OpenInference ``AGENT`` names any node called "agent").
    nested: bool = False
    name: str | None = None  # the framework's agent name (``gen_ai.agent.name``), raw
    # A tool call whose arguments the span records: (tool name, in-process hash of the
    # arguments); the arguments themselves are never kept.
    tool_call: tuple[str, int] | None = None


# A JSON message list longer than this is not parsed (memory and time stay bounded whatever a
# span holds); the call then reads from its finish reason alone.
MAX_JSON_CHARS: Final = 262_144
_CHAT_OPERATIONS: Final = frozenset(
    {semconv.OP_CHAT, semconv.OP_TEXT_COMPLETION, semconv.OP_GENERATE_CONTENT}
)
_AGENT_OPERATIONS: Final = frozenset({semconv.OP_INVOKE_AGENT, semconv.OP_INVOKE_WORKFLOW})
_TRACELOOP_RUN_KINDS: Final = frozenset(
    {semconv.TRACELOOP_KIND_WORKFLOW, semconv.TRACELOOP_KIND_AGENT}
)
# Finish reasons meaning "the model asked for tools", across vocabularies (OpenAI, semconv,
# Anthropic, Bedrock, legacy function calling), compared lower-case.
TOOL_FINISH_REASONS: Final = frozenset({"tool_calls", "tool_call", "tool_use", "function_call"})
_TEXT_PART_TYPES: Final = frozenset({"text", "output_text"})
_TOOL_PART_TYPES: Final = frozenset({"tool_call", "function_call", "tool_use"})
_MEDIA_PART_TYPES: Final = frozenset({"blob", "uri", "file", "image"})
# Parts that are no answer: the model's reasoning (an answer still needs text).
_SILENT_PART_TYPES: Final = frozenset({"reasoning", "thinking"})


def kind_of(attributes: Mapping[str, Any], is_root: bool) -> Kind:
    operation = attributes.get(semconv.GEN_AI_OPERATION_NAME)
    if operation in _CHAT_OPERATIONS:
        return Kind.CHAT
    if operation in _AGENT_OPERATIONS:
        return Kind.AGENT
    openinference = attributes.get(semconv.OPENINFERENCE_SPAN_KIND)
    if openinference == semconv.OPENINFERENCE_KIND_LLM:
        return Kind.CHAT
    if openinference == semconv.OPENINFERENCE_KIND_AGENT:
        return Kind.AGENT
    if openinference == semconv.OPENINFERENCE_KIND_CHAIN and is_root:
        return Kind.AGENT  # OpenInference names a LangGraph run a chain; its root is the run
    if attributes.get(semconv.TRACELOOP_SPAN_KIND) in _TRACELOOP_RUN_KINDS:
        return Kind.AGENT
    if attributes.get(semconv.TRACELOOP_REQUEST_TYPE) in _CHAT_OPERATIONS | {"completion"}:
        return Kind.CHAT
    return Kind.OTHER


def read_span(
    attributes: Mapping[str, Any],
    events: Sequence[Event],
    failed: bool,
    is_root: bool,
) -> SpanReading:
    kind = kind_of(attributes, is_root)
    if kind is Kind.CHAT:
        finish = finish_reasons(attributes)
        output = call_output(attributes, finish)
        return SpanReading(kind, output, finish[0] if finish else None)
    step_cap = _step_cap(attributes, events)
    if kind is Kind.AGENT:
        name = attributes.get(semconv.GEN_AI_AGENT_NAME)
        return SpanReading(
            kind,
            final_output(attributes),
            step_cap=step_cap,
            failed=failed,
            nested=attributes.get(semconv.GEN_AI_OPERATION_NAME) in _AGENT_OPERATIONS,
            name=name if isinstance(name, str) and name not in semconv.DEFAULT_RUN_NAMES else None,
        )
    return SpanReading(kind, step_cap=step_cap, tool_call=tool_call(attributes))


# --- tool calls --------------------------------------------------------------------------------


def tool_call(attributes: Mapping[str, Any]) -> tuple[str, int] | None:
    """A tool span's (name, hash of its arguments), when it records both; else None.

    GenAI ``execute_tool`` spans carry ``gen_ai.tool.call.arguments`` with content capture on
    (util-genai, Pydantic AI, OpenLLMetry); OpenInference ``TOOL`` spans carry the arguments as
    ``input.value`` (``__REDACTED__`` with inputs hidden: not known); OpenLLMetry's ``tool``
    spans as ``traceloop.entity.input``, LangChain's callback input, of which only
    ``input_str`` is the call's (the rest is run metadata that differs per step)."""
    if attributes.get(semconv.GEN_AI_OPERATION_NAME) == semconv.OP_EXECUTE_TOOL:
        name = attributes.get(semconv.GEN_AI_TOOL_NAME)
        arguments = attributes.get(semconv.GEN_AI_TOOL_CALL_ARGUMENTS)
        if arguments is None:
            arguments = attributes.get(semconv.TRACELOOP_ENTITY_INPUT)
    elif attributes.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.OPENINFERENCE_KIND_TOOL:
        name = attributes.get(semconv.OPENINFERENCE_TOOL_NAME)
        arguments = attributes.get(semconv.OPENINFERENCE_INPUT_VALUE)
    elif attributes.get(semconv.TRACELOOP_SPAN_KIND) == semconv.TRACELOOP_KIND_TOOL:
        name = attributes.get(semconv.TRACELOOP_ENTITY_NAME)
        arguments = attributes.get(semconv.TRACELOOP_ENTITY_INPUT)
    else:
        return None
    if not isinstance(name, str) or not isinstance(arguments, str):
        return None
    if arguments == semconv.OPENINFERENCE_REDACTED or len(arguments) > MAX_JSON_CHARS:
        return None
    if f'"{semconv.LANGCHAIN_TOOL_INPUT}"' in arguments:
        try:
            recorded = json.loads(arguments)
        except ValueError:
            pass  # not JSON: compared whole
        else:
            if isinstance(recorded, dict) and semconv.LANGCHAIN_TOOL_INPUT in recorded:
                arguments = recorded[semconv.LANGCHAIN_TOOL_INPUT]
    return name, signature(name, arguments)


# --- finish reasons ----------------------------------------------------------------------------


def finish_reasons(attributes: Mapping[str, Any]) -> list[str]:
    for key in (
        semconv.GEN_AI_RESPONSE_FINISH_REASONS,
        semconv.OPENINFERENCE_FINISH_REASON,
        semconv.TRACELOOP_FINISH_REASON,
        f"{semconv.TRACELOOP_COMPLETIONS}0.finish_reason",
    ):
        found = _reasons(attributes.get(key))
        if found:
            return found
    return []


def _reasons(value: object) -> list[str]:
    values: Iterable[object] = (value,) if isinstance(value, str) else _sequence(value)
    found = []
    for item in values:
        cleaned = clean_stop_reason(item) if isinstance(item, str) else None
        if cleaned:
            found.append(cleaned)
    return found


def _sequence(value: object) -> Sequence[object]:
    return value if isinstance(value, tuple | list) else ()


# --- call outputs ------------------------------------------------------------------------------


def call_output(attributes: Mapping[str, Any], finish: Sequence[str]) -> Output:
    """The call's output from its recorded messages, else from its finish reason."""
    text, tools, blank = _recorded(attributes)
    tools = tools or any(reason.lower() in TOOL_FINISH_REASONS for reason in finish)
    if text:
        return Output.TEXT
    if tools:
        return Output.TOOL_CALLS
    if blank or (finish and _captured_without_output(attributes)):
        return Output.BLANK
    return Output.UNKNOWN


def _captured_without_output(attributes: Mapping[str, Any]) -> bool:
    """The call's input messages are on the span (capture is on) but no output message is: an
    instrumentation that records only non-empty output (util-genai) saw none."""
    return (
        semconv.GEN_AI_INPUT_MESSAGES in attributes
        and semconv.GEN_AI_OUTPUT_MESSAGES not in attributes
    )


def final_output(attributes: Mapping[str, Any]) -> Output:
    """A run's final answer, where the run span records one as plain text or messages."""
    text, tools, blank = _semconv_messages(attributes.get(semconv.GEN_AI_OUTPUT_MESSAGES))
    if text:
        return Output.TEXT
    if blank and not tools:
        return Output.BLANK
    result = attributes.get(semconv.PYDANTIC_AI_FINAL_RESULT)
    if isinstance(result, str):
        return Output.TEXT if result.strip() else Output.BLANK
    mime = attributes.get(semconv.OPENINFERENCE_OUTPUT_MIME_TYPE)
    value = attributes.get(semconv.OPENINFERENCE_OUTPUT_VALUE)
    if isinstance(value, str) and mime == "text/plain":
        return Output.TEXT if value.strip() else Output.BLANK
    return Output.UNKNOWN  # structured state (a dict, a parsed object) says nothing of blankness


def _recorded(attributes: Mapping[str, Any]) -> tuple[bool, bool, bool]:
    """(has text, has tool calls, known blank) from whichever message attributes exist."""
    value = attributes.get(semconv.GEN_AI_OUTPUT_MESSAGES)
    if value is not None:
        return _semconv_messages(value)
    return _flattened(attributes)


def _semconv_messages(value: object) -> tuple[bool, bool, bool]:
    """``gen_ai.output.messages``: a JSON list of ``{role, parts: [{type, content?}]}``. A text
    part without ``content`` is one whose content was not captured: not known."""
    if not isinstance(value, str) or len(value) > MAX_JSON_CHARS:
        return False, False, False
    try:
        messages = json.loads(value)
    except ValueError:
        return False, False, False
    if not isinstance(messages, list):
        return False, False, False
    text = tools = hidden = False
    for message in messages:
        parts = message.get("parts") if isinstance(message, dict) else None
        if not isinstance(parts, list):
            hidden = True  # not a message this reader understands: nothing is known
            continue
        for part in parts:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind in _TOOL_PART_TYPES:
                tools = True
            elif kind in _TEXT_PART_TYPES:
                content = part.get("content")
                if isinstance(content, str):
                    text = text or bool(content.strip())
                else:
                    hidden = True
            elif kind in _MEDIA_PART_TYPES:
                text = True  # an image or file is an answer too
            elif kind not in _SILENT_PART_TYPES:
                hidden = True
    return text, tools, not (tools or hidden or text)


def _flattened(attributes: Mapping[str, Any]) -> tuple[bool, bool, bool]:
    """OpenInference ``llm.output_messages.{i}.message.*`` and OpenLLMetry's legacy
    ``gen_ai.completion.{i}.*``: flat keys, one attribute per field. Both drop every key of the
    messages when content is hidden, and write a message's content only when it has some: a
    message (its role) without content or tool calls is a blank one. OpenInference's redacted
    text (``hide_output_text``) stands for content there was, so it counts as text."""
    text = tools = message = False
    for key, value in attributes.items():
        if key.startswith(semconv.OPENINFERENCE_OUTPUT_MESSAGES):
            rest = key[len(semconv.OPENINFERENCE_OUTPUT_MESSAGES) :]
        elif key.startswith(semconv.TRACELOOP_COMPLETIONS):
            rest = key[len(semconv.TRACELOOP_COMPLETIONS) :]
        else:
            continue
        if ".tool_calls." in rest or rest.endswith(".function_call.name"):
            tools = True
        elif rest.endswith((".content", ".message_content.text")):
            message = True
            text = text or (isinstance(value, str) and bool(value.strip()))
        elif rest.endswith(".role"):
            message = True
    return text, tools, message and not text and not tools


def metadata_value(value: object, key: str) -> str | None:
    """``key`` of a JSON-object attribute (OpenInference's ``metadata``), as text, or None."""
    if not isinstance(value, str) or len(value) > MAX_JSON_CHARS or f'"{key}"' not in value:
        return None
    try:
        metadata = json.loads(value)
    except ValueError:
        return None
    found = metadata.get(key) if isinstance(metadata, dict) else None
    if isinstance(found, str) and found:
        return found
    if isinstance(found, int | float) and not isinstance(found, bool):
        return str(found)
    return None


# --- step caps ---------------------------------------------------------------------------------


def _step_cap(attributes: Mapping[str, Any], events: Sequence[Event]) -> bool:
    if _is_step_cap(attributes.get(semconv.ERROR_TYPE)):
        return True
    for event in events:
        if event.name != semconv.EXCEPTION_EVENT:
            continue
        if _is_step_cap((event.attributes or {}).get(semconv.EXCEPTION_TYPE)):
            return True
    return False


def _is_step_cap(value: object) -> bool:
    return is_step_cap_type(value)
