"""``SymfonicPlugin``: an ADK plugin recording invocations, model calls, tools and silent bails.

``Runner(agent=..., plugins=[SymfonicPlugin()])`` (or ``App(plugins=[...])``). Plugins are ADK's
supported extension point for cross-cutting behaviour: the runner calls them around every
invocation (``run``, ``run_async``, streaming in either), every model call and every tool, and
tells them of an error that escapes the invocation. Each invocation is one ``invoke_agent`` run
named after the invocation's agent.

How a run ended is read by structure: ``LlmCallsLimitExceededError`` (the exception *class*,
raised once ``RunConfig.max_llm_calls`` model calls were made) is a step cap: a silent bail with
stop reason ``recursion_limit``; any other error ends the run as ``error``; a run whose final
response has no text is a silent bail by its last model turn's shape.

The tenant is the ``tenant_scope`` around the run, else ``RunConfig(custom_metadata=...)``'s
``tenant_id``, else the session state's ``tenant_id``. Every callback is guarded and returns
``None`` (it never changes what the agent does); a failure is counted, never raised.
"""

from __future__ import annotations

import time
from typing import Any, Final, Unpack

from google.adk.agents.invocation_context import LlmCallsLimitExceededError
from google.adk.plugins.base_plugin import BasePlugin
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.google_adk.read import content_text, turn_of, usage_of
from symfonic_otel.invocation import tenant_in
from symfonic_otel.invocation.adapter import BookAdapter, BookOptions

__all__ = ["SymfonicPlugin"]

_NAME: Final = "SymfonicPlugin"


class SymfonicPlugin(BookAdapter, BasePlugin):
    """An ADK plugin recording every invocation of the runner it is given to.

    Its options are ``BookAdapter``'s.
    """

    adapter_name = _NAME

    def __init__(self, *, name: str = "symfonic_otel", **options: Unpack[BookOptions]) -> None:
        BasePlugin.__init__(self, name)
        BookAdapter.__init__(self, **options)

    # --- the invocation ------------------------------------------------------------------------

    async def before_run_callback(self, *, invocation_context: Any) -> None:
        self._book.guard("before_run", self._start, invocation_context)

    async def on_event_callback(self, *, invocation_context: Any, event: Any) -> None:
        self._book.guard("on_event", self._event, invocation_context, event)

    async def after_run_callback(self, *, invocation_context: Any) -> None:
        self._book.guard("after_run", self._end, invocation_context, None)

    async def on_run_error_callback(self, *, invocation_context: Any, error: Exception) -> None:
        self._book.guard("on_run_error", self._end, invocation_context, error)

    async def close(self) -> None:
        self._book.guard("close", self._book.close_all)

    def _start(self, ic: Any) -> None:
        config = getattr(ic, "run_config", None)
        session = getattr(ic, "session", None)
        tenant = tenant_in(getattr(config, "custom_metadata", None)) or tenant_in(
            getattr(session, "state", None)
        )
        attributes: dict[str, AttributeValue] = {}
        session_id = getattr(session, "id", None)
        if isinstance(session_id, str) and session_id:
            attributes[semconv.GEN_AI_CONVERSATION_ID] = session_id
        name = getattr(getattr(ic, "agent", None), "name", None)
        self._book.start(
            str(ic.invocation_id),
            name if isinstance(name, str) else "",
            tenant=tenant,
            query=content_text(getattr(ic, "user_content", None)),
            attributes=attributes,
        )

    def _event(self, ic: Any, event: Any) -> None:
        run = self._book.get(str(ic.invocation_id))
        if run is None or getattr(event, "author", None) == "user" or event.partial:
            return
        if event.is_final_response():  # what the user is shown (one per agent that answers)
            run.answer = content_text(getattr(event, "content", None))

    def _end(self, ic: Any, error: Exception | None) -> None:
        run_id = str(ic.invocation_id)
        if error is None:
            run = self._book.get(run_id)
            if run is not None and run.answer is None:  # no final response: the caller left
                self._book.end(run_id, "cancelled")
            else:
                self._book.end(run_id, "answered", answer=run.answer if run is not None else "")
        elif isinstance(error, LlmCallsLimitExceededError):
            self._book.end(run_id, "capped_raised", error_type=type(error).__name__)
        else:
            self._book.end(run_id, "error", error_type=type(error).__name__[:128])

    # --- model calls -----------------------------------------------------------------------------

    async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
        self._book.guard("before_model", self._model_start, callback_context, llm_request)

    async def after_model_callback(self, *, callback_context: Any, llm_response: Any) -> None:
        self._book.guard("after_model", self._model_end, callback_context, llm_response, None)

    async def on_model_error_callback(
        self, *, callback_context: Any, llm_request: Any, error: Exception
    ) -> None:
        self._book.guard("on_model_error", self._model_end, callback_context, None, error)

    def _model_start(self, cc: Any, request: Any) -> None:
        run = self._book.get(str(cc.invocation_id))
        if run is not None:
            run.model_started_ns = time.time_ns()
            model = getattr(request, "model", None)
            run.model = model if isinstance(model, str) else ""

    def _model_end(self, cc: Any, response: Any, error: Exception | None) -> None:
        run = self._book.get(str(cc.invocation_id))
        if run is None or (response is not None and getattr(response, "partial", False)):
            return  # a streamed chunk: the aggregated response follows
        version = getattr(response, "model_version", None)
        self._book.model_call(
            run,
            turn_of(response) if response is not None else None,
            model=version if isinstance(version, str) and version else run.model,
            usage=usage_of(response),
            started_ns=run.model_started_ns,
            error_type=type(error).__name__[:128] if error is not None else None,
        )
        run.model_started_ns = None

    # --- tools ------------------------------------------------------------------------------

    async def before_tool_callback(self, *, tool: Any, tool_args: Any, tool_context: Any) -> None:
        self._book.guard("before_tool", self._tool_start, tool, tool_args, tool_context)

    async def after_tool_callback(
        self, *, tool: Any, tool_args: Any, tool_context: Any, result: Any
    ) -> None:
        self._book.guard("after_tool", self._tool_end, tool_context, result, None)

    async def on_tool_error_callback(
        self, *, tool: Any, tool_args: Any, tool_context: Any, error: Exception
    ) -> None:
        self._book.guard("on_tool_error", self._tool_end, tool_context, None, error)

    def _tool_start(self, tool: Any, args: Any, tc: Any) -> None:
        run = self._book.get(str(tc.invocation_id))
        if run is not None:
            name = getattr(tool, "name", None)
            call_id = getattr(tc, "function_call_id", None)
            self._book.start_tool(
                run, name if isinstance(name, str) else "", str(call_id or ""), args
            )

    def _tool_end(self, tc: Any, result: Any, error: BaseException | None) -> None:
        run = self._book.get(str(tc.invocation_id))
        if run is not None:
            call_id = str(getattr(tc, "function_call_id", None) or "")
            error_type = type(error).__name__[:128] if error is not None else None
            self._book.end_tool(run, call_id, result, error_type)
