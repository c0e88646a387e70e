"""``SymfonicCapability``: a Pydantic AI capability recording runs, model calls, tools and bails.

``Agent(model, capabilities=[SymfonicCapability()])``. Capabilities are Pydantic AI's supported
extension point for cross-cutting behaviour: ``wrap_run`` sees every ``run`` / ``run_sync`` /
``run_stream`` / ``iter`` from start to end *with the exception it raised*, which is what decides
a bail (a step cap raises ``UsageLimitExceeded``; spent retries ``UnexpectedModelBehavior``);
``wrap_model_request`` sees each model response (parts, usage, model, finish reason) and its
timing; ``wrap_tool_execute`` each tool call. Each run gets its own instance (``for_run``),
which names its run in the invocation layer's bounded run model, shared by the copies.

The tenant is the ``tenant_scope`` around the run, else the run's ``metadata["tenant_id"]``.
Every hook is guarded: telemetry failures are logged once per kind and counted, never raised,
and the run's own result or exception passes through untouched.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Final

from opentelemetry import trace
from opentelemetry.util.types import AttributeValue
from pydantic_ai import DeferredToolRequests
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelRetry, RetryModelRequest, SkipModelRequest

from symfonic_otel import semconv
from symfonic_otel.core.loops import DEFAULT_LOOP_THRESHOLD, DEFAULT_RUNAWAY_CALLS
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.invocation import FrameworkRun, RunBook, answered, loop_handler, tenant_in
from symfonic_otel.logs import FailureLog
from symfonic_otel.pydantic_ai.verdicts import ending_of, turn_of
from symfonic_otel.read.content import json_text

__all__ = ["SymfonicCapability"]

_NAME: Final = "SymfonicCapability"
_MAX_TYPE_NAME: Final = 128
# Pydantic AI's own request control flow (a retry asked for, a request skipped): not failures.
_REQUEST_CONTROL: Final = (ModelRetry, RetryModelRequest, SkipModelRequest)
# The run whose tool is executing: an agent run inside that tool is its sub-run.
_TOOL_OF_RUN: ContextVar[str | None] = ContextVar("symfonic_pydantic_ai_tool_of_run", default=None)


@dataclass
class SymfonicCapability(AbstractCapability[Any]):
    """Records each run of the agent it is given to; see the module docstring.

    ``handler`` shares an ``OTelCallbackHandler`` (say, with a LangChain adapter); by default
    one on the global providers is built on first use. ``max_open_runs`` bounds the runs
    followed at once (the oldest is ended as abandoned).
    """

    handler: OTelCallbackHandler | None = None
    loop_threshold: int = DEFAULT_LOOP_THRESHOLD
    runaway_calls: int = DEFAULT_RUNAWAY_CALLS
    max_open_runs: int = 10_000
    _run_id: str | None = field(default=None, repr=False)
    _failures: FailureLog = field(default_factory=FailureLog, repr=False)
    _book: RunBook | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self._book is None:  # the per-run copies share the first one's
            self.handler = loop_handler(
                _NAME, self.handler, self.loop_threshold, self.runaway_calls
            )
            self._book = RunBook(
                self.handler,
                _NAME,
                self.max_open_runs,
                failures=self._failures,
                prefix="pydantic_ai",
            )

    @property
    def core(self) -> OTelCallbackHandler:
        return self.book.handler

    @property
    def book(self) -> RunBook:
        assert self._book is not None  # set in __post_init__
        return self._book

    def internal_failures(self) -> dict[str, int]:
        """The adapter's own failures per kind (shared by the per-run copies)."""
        return self._failures.counts()

    async def for_run(self, ctx: Any) -> AbstractCapability[Any]:
        return replace(self, _run_id=None)  # a copy per run: it names its run, nothing more

    # --- the run ----------------------------------------------------------------------------

    async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
        self.book.guard("run_start", self._start, ctx)
        try:
            result = await handler()
        except BaseException as exc:
            self.book.guard("run_end", self._end, exc, None)
            raise
        self.book.guard("run_end", self._end, None, getattr(result, "output", None))
        return result

    def _run(self) -> FrameworkRun | None:
        return self.book.get(self._run_id)

    def _start(self, ctx: Any) -> None:
        run_id = ctx.run_id if isinstance(ctx.run_id, str) and ctx.run_id else None
        if run_id is None:
            return  # Pydantic AI always sets one; without it there is nothing to pair ends with
        self._run_id = run_id
        attributes: dict[str, AttributeValue] = {}
        if isinstance(ctx.conversation_id, str) and ctx.conversation_id:
            attributes[semconv.GEN_AI_CONVERSATION_ID] = ctx.conversation_id
        outer = _TOOL_OF_RUN.get()
        if outer is not None and outer != run_id:
            attributes[semconv.RUN_PARENT_ID] = outer
        name = getattr(ctx.agent, "name", None)
        self.book.start(
            run_id,
            name if isinstance(name, str) else "",
            tenant=tenant_in(ctx.metadata),
            query=ctx.prompt if isinstance(ctx.prompt, str) else "",
            attributes=attributes,
        )

    def _end(self, error: BaseException | None, output: object) -> None:
        run_id, self._run_id = self._run_id, None
        if run_id is None:
            return
        ending = ending_of(error)
        error_type = type(error).__name__[:_MAX_TYPE_NAME] if error is not None else None
        final = None
        if error is None and output is not None:
            final = output if isinstance(output, str) else json_text(output)[0]
        if error is None and isinstance(output, DeferredToolRequests):
            ending = "paused"  # waiting for approvals or external results: no answer, no bail
        self.book.end(run_id, ending, final=final, answered=answered(output), error_type=error_type)

    # --- model requests and tools -------------------------------------------------------------

    async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
        started = time.time_ns()
        try:
            response = await handler(request_context)
        except _REQUEST_CONTROL:
            raise
        except BaseException as exc:  # a cancelled call is recorded too, naming the cancellation
            self.book.guard("model_request", self._model_call, None, started, exc)
            raise
        self.book.guard("model_request", self._model_call, response, started, None)
        return response

    def _model_call(self, response: object, started: int, error: BaseException | None) -> None:
        run = self._run()
        if run is None:
            return
        usage = getattr(response, "usage", None)
        model = getattr(response, "model_name", None)
        provider = getattr(response, "provider_name", None)
        self.book.model_call(
            run,
            turn_of(response) if response is not None else None,
            model=model if isinstance(model, str) else "",
            usage={
                name: value
                for name in ("input_tokens", "output_tokens")
                if isinstance(value := getattr(usage, name, None), int)
            },
            started_ns=started,
            error_type=type(error).__name__ if error is not None else None,
            provider=provider if isinstance(provider, str) else None,
            response_id=getattr(response, "provider_response_id", None),
        )

    async def wrap_tool_execute(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any
    ) -> Any:
        call_id = getattr(call, "tool_call_id", None)
        key = call_id if isinstance(call_id, str) else f"tool-{id(call):x}"
        span = self.book.guard("tool_start", self._open_tool, call, key, args)
        # While the tool runs, its span is the current one (an agent run inside it, or an HTTP
        # call, nests under it); both are restored in this frame, whatever the tool does.
        token = _TOOL_OF_RUN.set(self._run_id)
        try:
            if span is None:
                result = await handler(args)
            else:
                with trace.use_span(
                    span, end_on_exit=False, record_exception=False, set_status_on_exception=False
                ):  # the error is recorded by type only, never its message
                    result = await handler(args)
        except BaseException as exc:
            self.book.guard("tool_end", self._close_tool, key, None, type(exc).__name__)
            raise
        finally:
            _TOOL_OF_RUN.reset(token)
        self.book.guard("tool_end", self._close_tool, key, result, None)
        return result

    def _open_tool(self, call: Any, key: str, args: Any) -> Any:
        run = self._run()
        if run is None:
            return None
        name = str(getattr(call, "tool_name", ""))
        call_id = key if key == getattr(call, "tool_call_id", None) else ""
        self.book.tools.start(run, name, call_id, args, key=key)
        return run.tools.get(key)

    def _close_tool(self, key: str, result: object, error_type: str | None) -> None:
        run = self._run()
        if run is not None:
            self.book.tools.end(run, key, result, error_type)
