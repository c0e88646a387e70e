"""A model call's inputs: Symfonic's LLMStart and LLMPreCall -> attributes of its ``chat`` span.

``LLMStartEvent`` is the engine's view of a call (the conversation before system-message
consolidation and tool binding, and the system prompt); ``LLMPreCallEvent`` the wire-accurate one
(the consolidated messages, the bound tools, the provider's invocation parameters). What they say
waits on the call's ``PendingModelCall`` for its LLMEnd: the request parameters always (they are
not content; read at once, a few numbers), the messages and tools only with content capture on
(shallow copies of the lists, so what the agent appends later is not part of the call). The
content is rendered once, at the LLMEnd, in the shapes and budget of the LangChain adapter
(``content_json``): Symfonic sends both events for every call, and only one view is recorded,
the pre-call's messages when they can be read, else LLMStart's.

Each field is read on its own, so a bad one costs only its attribute; ``call_attributes`` renders
what was kept when the call ends.
"""

from __future__ import annotations

from typing import Any

from symfonic_otel.core.call_flow import CallFlow
from symfonic_otel.core.handler_core import HandlerCore
from symfonic_otel.core.steps import ModelInputs
from symfonic_otel.read import extract_steps as xs
from symfonic_otel.read.request_params import request_attributes


def _field(event: object, name: str) -> object:
    try:
        return getattr(event, name, None)
    except Exception:  # a property that raises: the field is absent
        return None


def _items(event: object, name: str) -> tuple[Any, ...] | None:
    """A shallow copy of a non-empty list or tuple field (a string is not a list of messages)."""
    value = _field(event, name)
    if not isinstance(value, list | tuple) or not value:
        return None
    try:
        return tuple(value)
    except Exception:  # a list subclass whose iteration raises
        return None


class InputFlow:
    """LLMStart (after the call flow has timed it) and LLMPreCall -> the pending call."""

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
            prompt = _field(event, "system_prompt")
            pending.inputs = ModelInputs(
                start_messages=_items(event, "messages"),
                system_prompt=prompt if isinstance(prompt, str) else "",
            )

    def llm_pre_call(self, event: Any) -> None:
        core = self._core
        step = xs.model_step(event)
        run = core.model_run(step.run_id, "llm_pre_call")
        if run is None:
            return
        pending = run.step_state().model_or_start(step.node)
        pending.request = request_attributes(_field(event, "invocation_params")) or None
        if core.spans.capture_content:
            inputs = pending.inputs
            if inputs is None:
                inputs = pending.inputs = ModelInputs()
            inputs.wire_messages = _items(event, "messages")
            inputs.tools = _items(event, "tools")
