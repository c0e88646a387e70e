"""``SymfonicHooks``: a Strands hook provider recording invocations, model calls, tools and bails.

``Agent(model, hooks=[SymfonicHooks()])``. Hook providers are Strands' supported extension
point: the agent fires typed events around every invocation (``agent(...)``, ``invoke_async``,
``stream_async``), every model call and every tool call. Each invocation is one
``invoke_agent`` run named after the agent.

Strands' step caps raise nothing: ``limits={"turns": ...}`` (or ``total_tokens`` /
``output_tokens``) ends the invocation normally with ``result.stop_reason`` ``limit_turns`` /
``limit_total_tokens`` / ``limit_output_tokens``. That stop reason, read from the result, is a
silent bail with stop reason ``recursion_limit``: the model was still calling tools when the
budget ran out, and the result's last message is the tools' results, not an answer.

The tenant is the ``tenant_scope`` around the invocation, else ``invocation_state["tenant_id"]``
(``agent("...", invocation_state={"tenant_id": "acme"})``). Every callback is guarded and changes
nothing the agent does; a failure is counted, never raised.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

from strands.hooks import (
    AfterInvocationEvent,
    AfterModelCallEvent,
    AfterToolCallEvent,
    BeforeInvocationEvent,
    BeforeModelCallEvent,
    BeforeToolCallEvent,
    HookRegistry,
)

from symfonic_otel.invocation import FrameworkRun, tenant_in
from symfonic_otel.invocation.adapter import BookAdapter
from symfonic_otel.strands.read import message_text, turn_of, usage_of

__all__ = ["SymfonicHooks"]

_NAME: Final = "SymfonicHooks"
# ``Limits``' stop reasons (strands.types.event_loop.StopReason): the budget ran out.
_LIMIT_STOPS: Final = frozenset({"limit_turns", "limit_total_tokens", "limit_output_tokens"})
_PAUSE_STOPS: Final = frozenset({"interrupt", "checkpoint"})


def _query(messages: object) -> str:
    if not isinstance(messages, list) or not messages:
        return ""
    last = messages[-1]
    blocks = last.get("content") if isinstance(last, Mapping) else None
    texts = [b.get("text") for b in blocks or [] if isinstance(b, Mapping)]
    return "".join(t for t in texts if isinstance(t, str))


class SymfonicHooks(BookAdapter):
    """A Strands hook provider recording every invocation of the agents it is given to.

    Its options are ``BookAdapter``'s.
    """

    adapter_name = _NAME

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        hook = self._book.guard.hook
        registry.add_callback(BeforeInvocationEvent, hook("before_invocation", self._start))
        registry.add_callback(AfterInvocationEvent, hook("after_invocation", self._end))
        registry.add_callback(BeforeModelCallEvent, hook("before_model", self._model_start))
        registry.add_callback(AfterModelCallEvent, hook("after_model", self._model_end))
        registry.add_callback(BeforeToolCallEvent, hook("before_tool", self._tool_start))
        registry.add_callback(AfterToolCallEvent, hook("after_tool", self._tool_end))

    # --- invocations ---------------------------------------------------------------------------

    def _start(self, event: BeforeInvocationEvent) -> None:
        agent = event.agent
        name = getattr(agent, "name", None)
        # Strands runs one invocation per agent at a time: the agent names its run.
        self._book.start(
            self._next_id(f"strands-{id(agent):x}"),
            name if isinstance(name, str) else "",
            tenant=tenant_in(event.invocation_state),
            query=_query(event.messages),
            key=id(agent),
        )

    def _end(self, event: AfterInvocationEvent) -> None:
        run = self._book.bound(id(event.agent))
        if run is None:
            return
        run_id, error = run.run_id, run.error_type  # the last model call's exception type
        result = event.result
        stop = getattr(result, "stop_reason", None)
        if result is None:  # the invocation raised (the exception is not on the event)
            self._book.end(run_id, "error", error_type=error)
        elif stop in _LIMIT_STOPS:
            self._book.end(run_id, "capped")
        elif stop == "cancelled":
            self._book.end(run_id, "cancelled")
        elif stop in _PAUSE_STOPS:
            self._book.end(run_id, "paused")
        else:
            answer = message_text(getattr(result, "message", None))
            stop_reason = "end_turn" if stop in (None, "end_turn") else str(stop)[:64]
            self._book.end(run_id, "answered", answer=answer, stop_reason=stop_reason)

    # --- model calls -----------------------------------------------------------------------------

    def _run_of(self, event: Any) -> FrameworkRun | None:
        return self._book.bound(id(event.agent))

    def _model_start(self, event: BeforeModelCallEvent) -> None:
        run = self._run_of(event)
        if run is not None:
            run.model_started_ns = time.time_ns()
            config = getattr(getattr(event.agent, "model", None), "config", None)
            model = config.get("model_id") if isinstance(config, Mapping) else None
            run.model = model if isinstance(model, str) else ""

    def _model_end(self, event: AfterModelCallEvent) -> None:
        run = self._run_of(event)
        if run is None:
            return
        response = event.stop_response
        error = type(event.exception).__name__[:128] if event.exception is not None else None
        if error is not None:
            run.error_type = error
        message = response.message if response is not None else None
        self._book.model_call(
            run,
            turn_of(message, response.stop_reason) if response is not None else None,
            model=run.model,
            usage=usage_of(message),
            started_ns=run.model_started_ns,
            error_type=error,
        )
        run.model_started_ns = None

    # --- tools ------------------------------------------------------------------------------

    def _tool_start(self, event: BeforeToolCallEvent) -> None:
        run = self._run_of(event)
        if run is not None:
            use = event.tool_use
            name, call_id = use.get("name"), use.get("toolUseId")
            self._book.start_tool(
                run, name if isinstance(name, str) else "", str(call_id or ""), use.get("input")
            )

    def _tool_end(self, event: AfterToolCallEvent) -> None:
        run = self._run_of(event)
        if run is None:
            return
        call_id = str(event.tool_use.get("toolUseId") or "")
        result = event.result
        error: str | None = None
        if event.exception is not None:
            error = type(event.exception).__name__[:128]
        elif isinstance(result, Mapping) and result.get("status") == "error":
            error = "ToolError"  # the tool reported a failure (its result's status)
        content = result.get("content") if isinstance(result, Mapping) else None
        self._book.end_tool(run, call_id, content, error)
