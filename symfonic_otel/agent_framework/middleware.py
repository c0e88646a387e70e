"""``SymfonicAgentFramework``: agent, chat and function middleware recording every agent run.

``Agent(client, middleware=SymfonicAgentFramework().middleware)``. Middleware is the Agent
Framework's supported extension point: the agent middleware wraps each run (``run``, and
``run(stream=True)``), the chat middleware each model call of its function-calling loop, the
function middleware each tool call. Each run is one ``invoke_agent`` span named after the agent.

The step cap raises nothing: once ``max_iterations`` model calls of the loop (or
``max_function_calls`` tool calls) are spent, the framework makes one more model call with
``tool_choice="none"`` and returns its reply as the run's answer, logging only at INFO. That
call is read by structure: a model call whose request has ``tool_choice`` ``none`` after a turn
of the same run that called tools. It is recorded as a ``react_synthesize_fallback`` call, and
the run is a silent bail with stop reason ``recursion_limit``; ``synthesis.recovered`` says
whether that forced call wrote text (a blank one the framework replaces with a canned message:
the canned text is not counted as the model's answer).

The tenant is the ``tenant_scope`` around the run, else the session's ``state["tenant_id"]``.
Every callback is guarded; a failure is counted, never raised, and the framework's own exception
reaches the caller unchanged.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, Final, Unpack

from agent_framework import (
    AgentContext,
    AgentMiddleware,
    ChatContext,
    ChatMiddleware,
    FunctionInvocationContext,
    FunctionMiddleware,
    ResponseStream,
)

from symfonic_otel import semconv
from symfonic_otel.agent_framework.read import response_text, turn_of, usage_of
from symfonic_otel.invocation import FrameworkRun, tenant_in
from symfonic_otel.invocation.adapter import BookAdapter, BookOptions

__all__ = ["SymfonicAgentFramework"]

_NAME: Final = "SymfonicAgentFramework"
# The run whose middleware is running: chat and function middleware run inside it (a streamed
# run's calls run in the caller's context, where its agent middleware ran when it was pulled).
_CURRENT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "symfonic_maf_run", default=None
)
Next = Callable[[], Awaitable[None]]


class SymfonicAgentFramework(BookAdapter):
    """Records every run of the agents given its ``middleware``.

    Its options are ``BookAdapter``'s.
    """

    adapter_name = _NAME

    def __init__(self, **options: Unpack[BookOptions]) -> None:
        super().__init__(**options)
        self._forced: OrderedDict[str, str] = OrderedDict()  # run id -> its forced answer's text
        self.middleware: list[Any] = [_Agent(self), _Chat(self), _Function(self)]

    def close(self) -> None:
        """End the runs still open as ``abandoned`` (at shutdown)."""
        self._book.guard("close", self._book.close_all)

    # --- runs ------------------------------------------------------------------------------------

    def _start(self, context: AgentContext) -> str:
        run_id = self._next_id("maf")
        name = getattr(context.agent, "name", None)
        state = getattr(context.session, "state", None)
        query = context.messages[-1].text if context.messages else ""
        self._book.start(
            run_id, name if isinstance(name, str) else "", tenant=tenant_in(state), query=query
        )
        return run_id

    def _end(self, run_id: str, result: object, error: BaseException | None) -> None:
        forced = self._forced.pop(run_id, None)
        if error is not None:
            if isinstance(error, Exception):
                self._book.end(run_id, "error", error_type=type(error).__name__[:128])
            else:  # CancelledError, GeneratorExit (the caller left the stream), KeyboardInterrupt
                self._book.end(run_id, "cancelled")
        elif forced is not None:
            self._book.end(run_id, "capped", answer=forced)
        else:
            self._book.end(run_id, "answered", answer=response_text(result))

    # --- model calls ----------------------------------------------------------------------------

    def _forced_call(self, run: FrameworkRun, options: object) -> bool:
        """The loop's cap reached: tools turned off after a turn that called tools."""
        choice = options.get("tool_choice") if isinstance(options, Mapping) else None
        return choice == "none" and run.last is not None and run.last.tool_calls > 0

    def _model_call(
        self, run_id: str | None, forced: bool, started: int, response: object, error: str | None
    ) -> None:
        run = self._book.get(run_id) if run_id is not None else None
        if run is None:
            return
        turn = turn_of(response) if response is not None else None
        model = getattr(response, "model", None)
        self._book.model_call(
            run,
            turn,
            model=model if isinstance(model, str) else "",
            usage=usage_of(response),
            started_ns=started,
            error_type=error,
            node=semconv.NODE_SYNTHESIZE_FALLBACK if forced else "",
        )
        if forced:
            self._forced[run.run_id] = turn.text if turn is not None else ""
            while len(self._forced) > self._book.max_open_runs:
                self._forced.popitem(last=False)

    # --- tools ------------------------------------------------------------------------------

    def _tool_start(self, run_id: str | None, name: str, call_id: str, args: object) -> None:
        run = self._book.get(run_id) if run_id is not None else None
        if run is not None:
            self._book.start_tool(run, name, call_id, args)

    def _tool_end(
        self, run_id: str | None, call_id: str, result: object, error: BaseException | None
    ) -> None:
        run = self._book.get(run_id) if run_id is not None else None
        if run is not None:
            error_type = type(error).__name__[:128] if error is not None else None
            self._book.end_tool(run, call_id, result, error_type)


class _Agent(AgentMiddleware):
    def __init__(self, adapter: SymfonicAgentFramework) -> None:
        self._adapter = adapter

    async def process(self, context: AgentContext, call_next: Next) -> None:
        adapter, book = self._adapter, self._adapter._book
        run_id = book.guard("agent_start", adapter._start, context)
        if not isinstance(run_id, str):
            await call_next()
            return
        token = _CURRENT.set(run_id)
        try:
            await call_next()
        except BaseException as exc:
            book.guard("agent_end", adapter._end, run_id, None, exc)
            _CURRENT.reset(token)
            raise
        result = context.result
        if isinstance(result, ResponseStream):  # ends when the caller has consumed it
            book.guard("agent_stream", _follow, result, lambda r, e: adapter._end(run_id, r, e))
            return  # the stream's calls run later in this context: the run stays current
        book.guard("agent_end", adapter._end, run_id, result, None)
        _CURRENT.reset(token)


class _Chat(ChatMiddleware):
    def __init__(self, adapter: SymfonicAgentFramework) -> None:
        self._adapter = adapter

    async def process(self, context: ChatContext, call_next: Next) -> None:
        adapter, book = self._adapter, self._adapter._book
        run_id, started = _CURRENT.get(), time.time_ns()
        run = book.get(run_id) if run_id is not None else None
        forced = run is not None and bool(
            book.guard("chat_start", adapter._forced_call, run, context.options)
        )
        try:
            await call_next()
        except BaseException as exc:  # a cancelled call is recorded too, as a stream's is
            error = type(exc).__name__[:128]
            book.guard("chat_end", adapter._model_call, run_id, forced, started, None, error)
            raise
        result = context.result
        if isinstance(result, ResponseStream):

            def ended(response: object, error: BaseException | None) -> None:
                error_type = type(error).__name__[:128] if error is not None else None
                adapter._model_call(run_id, forced, started, response, error_type)

            book.guard("chat_stream", _follow, result, ended)
            return
        book.guard("chat_end", adapter._model_call, run_id, forced, started, result, None)


class _Function(FunctionMiddleware):
    def __init__(self, adapter: SymfonicAgentFramework) -> None:
        self._adapter = adapter

    async def process(self, context: FunctionInvocationContext, call_next: Next) -> None:
        adapter, book = self._adapter, self._adapter._book
        run_id, call_id = _CURRENT.get(), adapter._next_id("maf-tool")
        name = getattr(context.function, "name", "")
        arguments = context.arguments
        args = arguments.model_dump() if hasattr(arguments, "model_dump") else dict(arguments)
        book.guard("tool_start", adapter._tool_start, run_id, name, call_id, args)
        try:
            await call_next()
        except BaseException as exc:
            book.guard("tool_end", adapter._tool_end, run_id, call_id, None, exc)
            raise
        book.guard("tool_end", adapter._tool_end, run_id, call_id, context.result, None)


def _follow(
    stream: ResponseStream[Any, Any], ended: Callable[[object, BaseException | None], None]
) -> None:
    """Call ``ended`` once, with the stream's final response or the error that ended it."""
    done = False

    def once(response: object, error: BaseException | None) -> None:
        nonlocal done
        if not done:
            done = True
            ended(response, error)

    def on_result(response: Any) -> None:
        once(response, None)

    @contextlib.contextmanager
    def around_pull() -> Iterator[None]:
        try:
            yield
        except StopAsyncIteration:
            raise
        except BaseException as exc:
            once(None, exc)
            raise

    stream.with_result_hook(on_result)
    stream.with_pull_context_manager(around_pull)
