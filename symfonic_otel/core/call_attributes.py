"""A model call's recorded inputs -> the attributes of its ``chat`` span, at its LLMEnd.

``call_inputs`` keeps what LLMStart and LLMPreCall said on the call's ``PendingModelCall``;
``call_flow`` asks this module for the attributes when the call ends. The content is rendered
once, in the shapes and budget of the LangChain adapter (``content_json``), and only one view
of the messages: the pre-call's when they can be read, else LLMStart's. Each field is rendered
on its own, so a bad one costs only its attribute.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.core.steps import ModelInputs, PendingModelCall
from symfonic_otel.read.content_json import input_messages_json, tool_definitions_json

__all__ = ["render", "span_attributes"]

Attributes = dict[str, AttributeValue]


def _messages(messages: Sequence[Any] | None, instructions: str, found: Attributes) -> bool:
    """Input messages and system instructions into ``found``; whether they could be rendered."""
    if messages is None and not instructions:
        return False
    try:
        system, history, truncated = input_messages_json(messages or (), instructions)
    except Exception:  # a message that cannot be read: these two attributes are lost, no more
        return False
    if system is not None:
        found[semconv.GEN_AI_SYSTEM_INSTRUCTIONS] = system
    if history is not None:
        found[semconv.GEN_AI_INPUT_MESSAGES] = history
    if truncated:
        found[semconv.CONTENT_TRUNCATED] = True
    return True


def _tools(tools: Sequence[Any], found: Attributes) -> None:
    try:
        definitions, truncated = tool_definitions_json(tools)
    except Exception:
        return
    if definitions is not None:
        found[semconv.GEN_AI_TOOL_DEFINITIONS] = definitions
    if truncated:
        found[semconv.CONTENT_TRUNCATED] = True


def render(inputs: ModelInputs) -> Attributes:
    """The content attributes of a call's inputs: the pre-call's view, else LLMStart's."""
    found: Attributes = {}
    if inputs.wire_messages is None or not _messages(inputs.wire_messages, "", found):
        _messages(inputs.start_messages, inputs.system_prompt, found)
    if inputs.tools is not None:
        _tools(inputs.tools, found)
    return found


def span_attributes(
    pending: PendingModelCall, caller: Mapping[str, AttributeValue] | None
) -> Mapping[str, AttributeValue] | None:
    """What the call's LLMStart / LLMPreCall said, under the adapter's own attributes (which
    win); ``caller`` itself when they said nothing."""
    found: Attributes = dict(pending.request) if pending.request else {}
    if pending.inputs is not None:
        found.update(render(pending.inputs))
    if not found:
        return caller
    return {**found, **caller} if caller else found
