"""A model call's inputs: Symfonic's LLMStart and LLMPreCall -> attributes of its ``chat`` span.

``LLMStartEvent`` is the engine's view of a call (the conversation before system-message
consolidation and tool binding, and the system prompt); ``LLMPreCallEvent`` the wire-accurate one
(the consolidated messages, the bound tools, the provider's invocation parameters). What they say
waits on the call's ``PendingModelCall`` for its LLMEnd: the request parameters always (they are
not content), the input messages, system instructions and tool definitions only with content
capture on. Content is rendered when the event comes, in the shapes and budget the LangChain
adapter uses (``content_json``): the span shows the conversation as it was sent even if the agent
goes on appending to the list, and a pending call holds a few capped strings, never the
caller's objects. The pre-call's messages, when they can be read, replace the start's.

Each field is read on its own, so a bad one costs only its attribute.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.util.types import AttributeValue

from symfonic_otel import extract_steps as xs
from symfonic_otel import semconv
from symfonic_otel.call_flow import CallFlow
from symfonic_otel.content_json import input_messages_json, tool_definitions_json
from symfonic_otel.handler_core import UNKNOWN_RUN, HandlerCore
from symfonic_otel.request_params import request_attributes

Attributes = dict[str, AttributeValue]


def _field(event: object, name: str) -> object:
    try:
        return getattr(event, name, None)
    except Exception:  # a property that raises: the field is absent
        return None


def _items(value: object) -> Sequence[Any] | None:
    """A non-empty list or tuple (a string or a mapping is not a list of messages or tools)."""
    return value if isinstance(value, list | tuple) and value else None


def _messages(event: object, instructions: str, found: Attributes) -> bool:
    """Input messages and system instructions into ``found``; whether the messages were read."""
    messages = _items(_field(event, "messages"))
    if messages is None and not instructions:
        return False
    try:
        system, history, truncated = input_messages_json(messages or (), instructions)
    except Exception:  # a message that cannot be read: the field is lost, nothing else
        return False
    if system is not None:
        found[semconv.GEN_AI_SYSTEM_INSTRUCTIONS] = system
    if history is not None:
        found[semconv.GEN_AI_INPUT_MESSAGES] = history
    if truncated:
        found[semconv.CONTENT_TRUNCATED] = True
    return messages is not None


def _tools(event: object, found: Attributes) -> None:
    tools = _items(_field(event, "tools"))
    if tools is None:
        return
    try:
        definitions, truncated = tool_definitions_json(tools)
    except Exception:
        return
    if definitions is not None:
        found[semconv.GEN_AI_TOOL_DEFINITIONS] = definitions
    if truncated:
        found[semconv.CONTENT_TRUNCATED] = True


def start_inputs(event: object) -> Attributes | None:
    """LLMStart's content (capture on only): its messages and system prompt."""
    prompt = _field(event, "system_prompt")
    found: Attributes = {}
    _messages(event, prompt if isinstance(prompt, str) else "", found)
    return found or None


def pre_call_inputs(event: object, capture: bool) -> tuple[Attributes, bool]:
    """LLMPreCall's attributes, and whether its messages were read (they replace LLMStart's)."""
    found = request_attributes(_field(event, "invocation_params"))
    if not capture:
        return found, False
    read = _messages(event, "", found)
    _tools(event, found)
    return found, read


class InputFlow:
    """LLMStart (after the call flow has timed it) and LLMPreCall -> the pending call's inputs."""

    __slots__ = ("_calls", "_core")

    def __init__(self, core: HandlerCore, calls: CallFlow) -> None:
        self._core = core
        self._calls = calls

    def llm_start(self, event: Any) -> None:
        self._calls.llm_start(event)
        if not self._core.spans.capture_content:
            return  # LLMStart carries nothing else a span may hold without capture
        step = xs.model_step(event)
        run = self._core.run(step.run_id)
        pending = run.steps.model_at(step.node) if run is not None and run.steps else None
        if pending is not None:
            pending.inputs = start_inputs(event)

    def llm_pre_call(self, event: Any) -> None:
        core = self._core
        step = xs.model_step(event)
        run = core.run(step.run_id)
        if run is None:
            if step.run_id:  # no run id at all: a standalone call, nothing to wait for
                core.drop("llm_pre_call", UNKNOWN_RUN)
            return
        found, replaces = pre_call_inputs(event, core.spans.capture_content)
        pending = run.step_state().model_or_start(step.node)
        if replaces or not pending.inputs:
            pending.inputs = found or None
        else:
            pending.inputs = {**pending.inputs, **found}
