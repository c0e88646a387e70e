"""``SymfonicFilters``: Semantic Kernel filters recording prompt-function runs, model calls, tools.

``SymfonicFilters().register(kernel)`` adds a function invocation filter and an auto function
invocation filter, the kernel's supported extension points. Each invocation of a prompt function
(``kernel.invoke``, ``kernel.invoke_prompt``, ``kernel.invoke_stream``) is one ``invoke_agent``
run named after the function; the auto function invocation loop's requests become ``chat`` spans
and the functions it calls ``execute_tool`` spans.

The step cap, by structure: with ``FunctionChoiceBehavior.Auto`` the chat service makes at most
``maximum_auto_invoke_attempts`` requests (5) that may call functions. When every one of them
called functions, the non-streaming loop makes one more request with function calling switched
off and returns its reply normally: a silent bail with stop reason ``recursion_limit``, whose last
model call is that forced answer (node ``react_synthesize_fallback``, ``synthesis.recovered``
true when it has text). The streaming loop simply stops after the last attempt's function results
(no final request): the same bail, without a fallback. The adapter counts the requests that
called functions against the request settings' attempt count; no text is read.

The tenant is the ``tenant_scope`` around the invocation, else ``arguments["tenant_id"]``
(``KernelArguments(tenant_id="acme")``). Every step is guarded; a failure is counted, never raised.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

from semantic_kernel import Kernel
from semantic_kernel.filters import (
    AutoFunctionInvocationContext,
    FilterTypes,
    FunctionInvocationContext,
)
from semantic_kernel.functions.kernel_function_from_prompt import KernelFunctionFromPrompt

from symfonic_otel import semconv
from symfonic_otel.invocation import FrameworkRun, tenant_in
from symfonic_otel.invocation.adapter import BookAdapter
from symfonic_otel.semantic_kernel.read import (
    attempt_cap,
    message_with,
    results_text,
    turn_of,
    usage_of,
)

__all__ = ["SymfonicFilters"]

_NAME: Final = "SymfonicFilters"
_MAX_CHUNKS: Final = 4_096


@dataclass(slots=True)
class _Invocation:
    """What the loop of one prompt-function invocation shows beyond the run: its attempt cap,
    the last request recorded, whether a filter ended the loop, a streamed reply's chunks."""

    run_id: str
    cap: int | None = None
    request: int = -1
    terminated: bool = False
    chunks: list[Any] = field(default_factory=list)
    chunk_calls: int = 0


# The invocation a filter runs in (tools run in tasks that copy it), and the exception type of
# the function an auto function invocation is running (Semantic Kernel swallows it).
_ACTIVE: ContextVar[_Invocation | None] = ContextVar("symfonic_sk_invocation", default=None)
_TOOL_ERROR: ContextVar[list[str] | None] = ContextVar("symfonic_sk_tool_error", default=None)
# Inside a prompt function called as a tool: nothing below it is recorded (it is one tool call).
_NESTED: Final = _Invocation("")

_Next = Callable[[Any], Awaitable[None]]


class SymfonicFilters(BookAdapter):
    """Records every prompt-function invocation of the kernels it is registered on.

    Its options are ``BookAdapter``'s.
    """

    adapter_name = _NAME

    def register(self, kernel: Kernel) -> Kernel:
        """Add both filters to ``kernel`` (returned, for chaining)."""
        kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, self.function_invocation)
        kernel.add_filter(FilterTypes.AUTO_FUNCTION_INVOCATION, self.auto_function_invocation)
        return kernel

    # --- the filters -----------------------------------------------------------------------------

    async def function_invocation(self, context: FunctionInvocationContext, next: _Next) -> None:
        active = _ACTIVE.get()
        if active is _NESTED:
            await next(context)
            return
        if active is not None:  # a function run inside a run: its auto filter records it
            slot = _TOOL_ERROR.get()
            # A prompt function called as a tool is one tool call: its own loop stays out.
            nested = isinstance(context.function, KernelFunctionFromPrompt)
            token = _ACTIVE.set(_NESTED) if nested else None
            try:
                await next(context)
            except Exception as exc:
                if slot is not None and not slot:
                    slot.append(type(exc).__name__[:128])
                raise
            finally:
                if token is not None:
                    _ACTIVE.reset(token)
            return
        if not isinstance(context.function, KernelFunctionFromPrompt):
            await next(context)
            return
        invocation = self._book.guard("function_start", self._start, context)
        if not isinstance(invocation, _Invocation):
            await next(context)
            return
        token = _ACTIVE.set(invocation)
        try:
            await next(context)
        except BaseException as exc:
            self._book.guard("function_end", self._fail, invocation, exc)
            raise
        finally:
            _ACTIVE.reset(token)
        result = context.result
        value = getattr(result, "value", None)
        if result is not None and isinstance(value, AsyncGenerator):
            result.value = self._streamed(invocation, value)
        else:
            self._book.guard("function_end", self._end, invocation, value)

    async def auto_function_invocation(
        self, context: AutoFunctionInvocationContext, next: _Next
    ) -> None:
        invocation = _ACTIVE.get()
        if invocation is None or invocation is _NESTED:
            await next(context)
            return
        self._book.guard("tool_start", self._tool_start, invocation, context)
        slot: list[str] = []
        token = _TOOL_ERROR.set(slot)
        try:
            await next(context)
        except BaseException as exc:
            self._book.guard("tool_end", self._tool_end, invocation, context, type(exc).__name__)
            raise
        finally:
            _TOOL_ERROR.reset(token)
        error = slot[0] if slot else None
        self._book.guard("tool_end", self._tool_end, invocation, context, error)

    # --- runs ------------------------------------------------------------------------------------

    def _start(self, context: FunctionInvocationContext) -> _Invocation | None:
        run_id = self._next_id("semantic-kernel")
        name = context.function.name
        run = self._book.start(
            run_id, name if isinstance(name, str) else "", tenant=tenant_in(context.arguments)
        )
        if run is None:
            return None
        run.model_started_ns = time.time_ns()
        return _Invocation(run_id)

    def _capped(self, invocation: _Invocation, calls: int) -> bool:
        """Every allowed request called functions (and no filter ended the loop)."""
        cap = invocation.cap
        return cap is not None and calls >= cap and not invocation.terminated

    def _end(self, invocation: _Invocation, value: object) -> None:
        run = self._book.get(invocation.run_id)
        if run is None:
            return
        messages = list(value) if isinstance(value, list) else [value]
        if invocation.terminated or results_text(messages) is not None:  # function results
            self._terminated(invocation, messages)
            return
        self._reply(run, messages, capped=self._capped(invocation, run.calls))

    def _reply(self, run: FrameworkRun, messages: list[Any], *, capped: bool = False) -> None:
        """The final request's reply ``messages`` end the run: its last model call (the forced
        final answer when ``capped``), then the answer."""
        turn = turn_of(messages)
        self._book.model_call(
            run,
            turn,
            model=_model_of(messages),
            usage=usage_of(messages),
            started_ns=run.model_started_ns,
            node=semconv.NODE_SYNTHESIZE_FALLBACK if capped else "",
        )
        self._book.end(run.run_id, "capped" if capped else "answered", answer=turn.text)

    def _terminated(self, invocation: _Invocation, messages: list[Any]) -> None:
        """A filter ended the loop: the function results are the reply (no final request)."""
        answer = results_text(messages) or ""
        self._book.end(invocation.run_id, "answered", answer=answer, stop_reason="tool_use")

    def _fail(self, invocation: _Invocation, exc: BaseException) -> None:
        if isinstance(exc, (asyncio.CancelledError, GeneratorExit)):
            self._book.end(invocation.run_id, "cancelled")
        else:
            self._book.end(invocation.run_id, "error", error_type=type(exc).__name__[:128])

    async def _streamed(
        self, invocation: _Invocation, inner: AsyncGenerator[Any, Any]
    ) -> AsyncGenerator[Any, Any]:
        """The streamed reply, recorded as it passes: the loop runs while it is read."""
        while True:
            token = _ACTIVE.set(invocation)
            try:
                chunk = await inner.__anext__()
            except StopAsyncIteration:
                break
            except BaseException as exc:
                self._book.guard("stream_end", self._fail, invocation, exc)
                raise
            finally:
                _ACTIVE.reset(token)
            self._book.guard("stream_chunk", self._chunk, invocation, chunk)
            try:
                yield chunk
            except BaseException as exc:  # the reader stopped early (aclose)
                self._book.guard("stream_end", self._fail, invocation, exc)
                raise
        self._book.guard("stream_end", self._stream_end, invocation)

    def _chunk(self, invocation: _Invocation, chunk: object) -> None:
        run = self._book.get(invocation.run_id)
        if run is None:
            return
        messages = chunk if isinstance(chunk, list) else [chunk]
        results = results_text(messages) is not None
        after_results = results_text(invocation.chunks[:1]) is not None
        if run.calls != invocation.chunk_calls or results or after_results:
            invocation.chunks.clear()  # a new request's reply, or function results: start over
            invocation.chunk_calls = run.calls
        if len(invocation.chunks) < _MAX_CHUNKS:
            invocation.chunks.extend(messages)

    def _stream_end(self, invocation: _Invocation) -> None:
        run = self._book.get(invocation.run_id)
        if run is None:
            return
        chunks, invocation.chunks = invocation.chunks, []
        capped = self._capped(invocation, run.calls)
        if invocation.terminated or (not capped and results_text(chunks) is not None):
            self._terminated(invocation, chunks)  # the stream ended on function results
            return
        if invocation.chunk_calls != run.calls:
            chunks = []  # the last chunks were the last attempt's function call
        if capped:
            self._book.end(run.run_id, "capped")  # the streaming loop makes no final request
            return
        self._reply(run, chunks)

    # --- tools and the requests that called them ------------------------------------------------

    def _tool_start(self, invocation: _Invocation, context: AutoFunctionInvocationContext) -> None:
        run = self._book.get(invocation.run_id)
        if run is None:
            return
        cap = attempt_cap(context.execution_settings)
        if cap is not None:
            invocation.cap = cap
        call = context.function_call_content
        if context.request_sequence_index > invocation.request:  # this request's first call
            invocation.request = context.request_sequence_index
            message = message_with(context.chat_history, call)
            messages = [message] if message is not None else []
            self._book.model_call(
                run,
                turn_of(messages),
                model=_model_of(messages),
                usage=usage_of(messages),
                started_ns=run.model_started_ns,
            )
        name = context.function.name
        call_id = getattr(call, "id", None) or f"{name}#{context.function_sequence_index}"
        arguments = call.parse_arguments() if call is not None else None
        self._book.start_tool(run, name, str(call_id), dict(arguments or {}))

    def _tool_end(
        self, invocation: _Invocation, context: AutoFunctionInvocationContext, error: str | None
    ) -> None:
        run = self._book.get(invocation.run_id)
        if run is None:
            return
        invocation.terminated = invocation.terminated or bool(context.terminate)
        call = context.function_call_content
        name = context.function.name
        call_id = getattr(call, "id", None) or f"{name}#{context.function_sequence_index}"
        result = context.function_result.value if context.function_result is not None else None
        self._book.end_tool(run, str(call_id), result, error[:128] if error else None)
        run.model_started_ns = time.time_ns()  # the next request starts after the last result


def _model_of(messages: list[Any]) -> str:
    for message in messages:
        model = getattr(message, "ai_model_id", None)
        if isinstance(model, str) and model:
            return model
    return ""
