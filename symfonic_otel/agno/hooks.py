"""``SymfonicAgno``: Agno pre/post hooks and a tool hook recording runs, model calls and tools.

``SymfonicAgno().instrument(agent)`` adds its hooks to the agent (``pre_hooks``,
``post_hooks``, ``tool_hooks``: Agno's supported extension points) for every entry point
(``run``, ``arun``, streaming in either). Each run is one ``invoke_agent`` span named after the
agent; its model calls are read from the run's own assistant messages when it ends, its tool
calls are recorded live by the tool hook (so a repeating tool call is seen while it repeats).

Agno's ``tool_call_limit`` is a soft limit: past it each call is refused (the model is told so
in a tool result) and the loop goes on until the model answers. A run whose model asked for more
tool calls than the agent's ``tool_call_limit`` hit that limit: a silent bail with stop reason
``recursion_limit`` (the answer written after the refusals, if any, is kept). That is read from
the count of tool calls in the run's messages against the configured limit, never from text.

Agno catches a model's exception and returns the run with status ``error`` without calling the
post hooks, and it has no model-call hook. So ``instrument`` gives the agent's model a subclass
of its own class (as Agno's own tracing wraps the model's methods) whose response methods only
see that exception pass: the run ends ``error`` with its type, the exception goes on unchanged;
a copy Agno makes of the agent (``deep_copy``) keeps it. A run that pauses for input or is
cancelled calls no post hook either: it stays open until the open-run cap closes it abandoned.

The tenant is the ``tenant_scope`` around the run, else the run's ``metadata`` or
``session_state`` ``tenant_id``. Every hook is guarded; a failure is counted, never raised.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any, Final, Unpack

from agno.agent import Agent
from agno.exceptions import RunCancelledException
from agno.models.base import Model
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.agno.read import answer_of, run_turns, tool_call_count, turn_of, usage_of
from symfonic_otel.invocation import FrameworkRun, RunBook, tenant_in
from symfonic_otel.invocation.adapter import BookAdapter, BookOptions

__all__ = ["SymfonicAgno"]

# Agno's own cancellation, and the interruptions that stop a run from outside (Ctrl-C, a
# cancelled task): each ends the run cancelled, as the design says, never an error.
_CANCELLED: Final = (RunCancelledException, asyncio.CancelledError, KeyboardInterrupt)

_NAME: Final = "SymfonicAgno"
_GUARDED: Final = "_symfonic_otel_guarded"


def _model_id(agent: object) -> str:
    model_id = getattr(getattr(agent, "model", None), "id", None)
    return model_id if isinstance(model_id, str) else ""


class SymfonicAgno(BookAdapter):
    """Records every run of the Agno agents it instruments.

    Its options are ``BookAdapter``'s.
    """

    adapter_name = _NAME

    def __init__(self, **options: Unpack[BookOptions]) -> None:
        super().__init__(**options)
        self._guarded: dict[type[Model], type[Model]] = {}  # a model class -> its guarded one

    def close(self) -> None:
        """End the runs still open as ``abandoned`` (at shutdown)."""
        self._book.guard("close", self._book.close_all)

    def instrument(self, agent: Agent) -> Agent:
        """Add the hooks to ``agent`` (once) and guard its model; returns the agent."""
        if not isinstance(agent, Agent):
            raise TypeError(f"{_NAME}.instrument: expected an agno Agent, got {type(agent)!r}")
        pre = list(agent.pre_hooks or [])
        if self.pre_hook not in pre:
            agent.pre_hooks = [*pre, self.pre_hook]
            agent.post_hooks = [*(agent.post_hooks or []), self.post_hook]
            agent.tool_hooks = [*(agent.tool_hooks or []), self.tool_hook]
        if isinstance(agent.model, Model):
            self._guard_model(agent.model)
        return agent

    # --- the run -----------------------------------------------------------------------------

    def pre_hook(self, run_input: Any, run_context: Any, agent: Any) -> None:
        self._book.guard("pre_hook", self._start, run_input, run_context, agent)

    def post_hook(self, run_output: Any, run_context: Any, agent: Any) -> None:
        self._book.guard("post_hook", self._end, run_output, run_context, agent)

    def _start(self, run_input: Any, run_context: Any, agent: Any) -> None:
        attributes: dict[str, AttributeValue] = {}
        session_id = getattr(run_context, "session_id", None)
        if isinstance(session_id, str) and session_id:
            attributes[semconv.GEN_AI_CONVERSATION_ID] = session_id
        name = getattr(agent, "name", None)
        query = getattr(run_input, "input_content", None)
        self._book.start(
            str(run_context.run_id),
            name if isinstance(name, str) else "",
            tenant=tenant_in(getattr(run_context, "metadata", None))
            or tenant_in(getattr(run_context, "session_state", None)),
            query=query if isinstance(query, str) else "",
            attributes=attributes,
        )

    def _end(self, run_output: Any, run_context: Any, agent: Any) -> None:
        run = self._book.get(str(run_context.run_id))
        if run is None:
            return
        turns = run_turns(getattr(run_output, "messages", None))
        self._record(run, turns, _model_id(agent))
        limit = getattr(agent, "tool_call_limit", None)
        answer = answer_of(getattr(run_output, "content", None))
        if isinstance(limit, int) and tool_call_count(turns) > limit:
            self._book.end(run.run_id, "capped", answer=answer)  # the soft limit refused calls
        else:
            self._book.end(run.run_id, "answered", answer=answer)

    def _record(self, run: FrameworkRun, turns: list[Any], model: str) -> None:
        for message in turns[run.calls :]:  # a run recorded in part by a failed model call
            self._book.model_call(run, turn_of(message), model=model, usage=usage_of(message))

    # --- the model's exception -----------------------------------------------------------------

    def _failed(self, kwargs: Mapping[str, Any], exc: BaseException) -> None:
        run = self._book.get(str(getattr(kwargs.get("run_response"), "run_id", "")))
        if run is None:
            return
        self._record(run, run_turns(kwargs.get("messages")), "")
        if isinstance(exc, _CANCELLED):
            self._book.end(run.run_id, "cancelled")
        else:
            self._book.end(run.run_id, "error", error_type=type(exc).__name__[:128])

    def _guard_model(self, model: Model) -> None:
        """Make ``model`` an instance of a subclass of its class whose response methods see
        their exception pass (a copy Agno makes of the agent's model keeps the subclass)."""
        base = type(model)
        if getattr(base, _GUARDED, None) is self:
            return
        guarded = self._guarded.get(base)
        if guarded is None:
            guarded = self._guarded[base] = _guarded_class(base, self._book, self._failed)
            setattr(guarded, _GUARDED, self)
        model.__class__ = guarded

    # --- tools --------------------------------------------------------------------------------

    def tool_hook(
        self,
        run_context: Any,
        agent: Any,
        function_name: str,
        function_call: Callable[..., Any],
        arguments: dict[str, Any],
    ) -> Any:
        """Agno's tool middleware: the call runs inside, its exception passes unchanged."""
        call_id = self._next_id("agno")
        self._book.guard(
            "tool_start", self._tool_start, run_context, agent, function_name, call_id, arguments
        )
        try:
            result = function_call(**arguments)
        except BaseException as exc:
            self._book.guard("tool_end", self._tool_end, run_context, call_id, None, exc)
            raise
        if inspect.isawaitable(result):  # an async run: the call is awaited by Agno
            return self._awaited(result, run_context, call_id)
        self._book.guard("tool_end", self._tool_end, run_context, call_id, result, None)
        return result

    async def _awaited(self, pending: Awaitable[Any], run_context: Any, call_id: str) -> Any:
        try:
            result = await pending
        except BaseException as exc:
            self._book.guard("tool_end", self._tool_end, run_context, call_id, None, exc)
            raise
        self._book.guard("tool_end", self._tool_end, run_context, call_id, result, None)
        return result

    def _tool_start(
        self, run_context: Any, agent: Any, name: str, call_id: str, arguments: object
    ) -> None:
        run = self._book.get(str(getattr(run_context, "run_id", "")))
        if run is not None:
            # The model turn that asked for this call is in the run's messages already: record
            # it now, so the run's model calls are counted while it runs.
            self._record(run, run_turns(getattr(run_context, "messages", None)), _model_id(agent))
            self._book.start_tool(run, name if isinstance(name, str) else "", call_id, arguments)

    def _tool_end(
        self, run_context: Any, call_id: str, result: object, error: BaseException | None
    ) -> None:
        run = self._book.get(str(getattr(run_context, "run_id", "")))
        if run is not None:
            error_type = type(error).__name__[:128] if error is not None else None
            self._book.end_tool(run, call_id, result, error_type)


def _guarded_class(
    base: type[Model],
    book: RunBook,
    failed: Callable[[Mapping[str, Any], BaseException], None],
) -> type[Model]:
    """``base`` with its four response methods calling ``failed`` as an exception passes."""

    class Guarded(base):  # type: ignore[valid-type,misc]
        def response(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return super().response(*args, **kwargs)
            except BaseException as exc:
                book.guard("model_error", failed, kwargs, exc)
                raise

        async def aresponse(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return await super().aresponse(*args, **kwargs)
            except BaseException as exc:
                book.guard("model_error", failed, kwargs, exc)
                raise

        def response_stream(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                yield from super().response_stream(*args, **kwargs)
            except BaseException as exc:
                book.guard("model_error", failed, kwargs, exc)
                raise

        async def aresponse_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            try:
                async for item in super().aresponse_stream(*args, **kwargs):
                    yield item
            except BaseException as exc:
                book.guard("model_error", failed, kwargs, exc)
                raise

    Guarded.__name__, Guarded.__qualname__ = base.__name__, base.__qualname__
    Guarded.__module__ = base.__module__
    return Guarded
