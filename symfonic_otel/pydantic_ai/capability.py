"""``SymfonicCapability``: a Pydantic AI capability recording runs, model calls, tools and bails.

``Agent(model, capabilities=[SymfonicCapability()])``. Capabilities are Pydantic AI's supported
extension point for cross-cutting behaviour: ``wrap_run`` sees every ``run`` / ``run_sync`` /
``run_stream`` / ``iter`` from start to end *with the exception it raised*, which is what decides
a bail (a step cap raises ``UsageLimitExceeded``; spent retries ``UnexpectedModelBehavior``);
``wrap_model_request`` sees each model response (parts, usage, model, finish reason) and its
timing; ``wrap_tool_execute`` each tool call. Each run gets its own instance (``for_run``), so no
state is shared between runs and nothing outlives one.

The tenant is the ``tenant_scope`` around the run, else the run's ``metadata["tenant_id"]``.
Every hook is guarded: telemetry failures are logged once per kind and counted, never raised,
and the run's own result or exception passes through untouched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
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
from symfonic_otel.events import AgentStartEvent, LLMEndEvent, ReactLoopEndEvent
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.invocation import loop_handler
from symfonic_otel.logs import FailureLog
from symfonic_otel.pydantic_ai.verdicts import Ending, Turn, ending_of, turn_of
from symfonic_otel.read.content import json_text

__all__ = ["SymfonicCapability"]

_TENANT_KEY: Final = "tenant_id"
# Control flow of a model request, not a failed call (another attempt follows, or none is made).
_REQUEST_CONTROL: Final = (ModelRetry, RetryModelRequest, SkipModelRequest)
# The run whose tool is executing: an agent run inside that tool is its sub-run.
_TOOL_OF_RUN: ContextVar[str | None] = ContextVar("symfonic_pydantic_ai_tool_of_run", default=None)


@dataclass(slots=True)
class _Run:
    run_id: str
    started: float
    calls: int = 0
    last: Turn | None = None


@dataclass(frozen=True, slots=True)
class _Paused:
    """The core's InterruptEvent for a run that ended waiting on deferred tool calls."""

    run_id: str
    name: str = ""


@dataclass(frozen=True, slots=True)
class _End:
    run_id: str
    final_response: str | None
    duration_ms: float
    outcome: str
    stop_reason: str
    error_type: str | None
    node_count: int | None = None


def _captured(key: str, value: object) -> dict[str, AttributeValue]:
    text, truncated = json_text(value)
    attributes: dict[str, AttributeValue] = {key: text}
    if truncated:
        attributes[semconv.CONTENT_TRUNCATED] = True
    return attributes


def _answered(output: object) -> bool:
    return output is not None and not (isinstance(output, str) and not output.strip())


@dataclass
class SymfonicCapability(AbstractCapability[Any]):
    """Records each run of the agent it is given to; see the module docstring.

    ``handler`` shares an ``OTelCallbackHandler`` (say, with a LangChain adapter); by default
    one on the global providers is built on first use.
    """

    handler: OTelCallbackHandler | None = None
    loop_threshold: int = DEFAULT_LOOP_THRESHOLD
    runaway_calls: int = DEFAULT_RUNAWAY_CALLS
    _run: _Run | None = field(default=None, repr=False)
    _failures: FailureLog = field(default_factory=FailureLog, repr=False)

    def __post_init__(self) -> None:
        self.handler = loop_handler(
            "SymfonicCapability", self.handler, self.loop_threshold, self.runaway_calls
        )

    @property
    def core(self) -> OTelCallbackHandler:
        assert self.handler is not None  # set in __post_init__
        return self.handler

    def internal_failures(self) -> dict[str, int]:
        """The adapter's own failures per kind (shared by the per-run copies)."""
        return self._failures.counts()

    async def for_run(self, ctx: Any) -> AbstractCapability[Any]:
        return replace(self, _run=None)  # a fresh copy per run: its state dies with the run

    # --- the run ----------------------------------------------------------------------------

    async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
        self._guard("run_start", self._start, ctx)
        try:
            result = await handler()
        except BaseException as exc:
            self._guard("run_end", self._end, exc, None)
            raise
        self._guard("run_end", self._end, None, getattr(result, "output", None))
        return result

    def _start(self, ctx: Any) -> None:
        run_id = ctx.run_id if isinstance(ctx.run_id, str) and ctx.run_id else None
        if run_id is None:
            return  # Pydantic AI always sets one; without it there is nothing to pair ends with
        self._run = _Run(run_id, time.monotonic())
        attributes: dict[str, AttributeValue] = {}
        name = getattr(ctx.agent, "name", None)
        if isinstance(name, str) and name:
            attributes[semconv.GEN_AI_AGENT_NAME] = name
        if isinstance(ctx.conversation_id, str) and ctx.conversation_id:
            attributes[semconv.GEN_AI_CONVERSATION_ID] = ctx.conversation_id
        outer = _TOOL_OF_RUN.get()
        if outer is not None and outer != run_id:
            attributes[semconv.RUN_PARENT_ID] = outer
        metadata = ctx.metadata
        tenant = metadata.get(_TENANT_KEY) if isinstance(metadata, Mapping) else None
        query = ctx.prompt if self.core.capture_content and isinstance(ctx.prompt, str) else ""
        self.core.agent_start(
            AgentStartEvent(query=query, run_id=run_id),
            tenant_id=tenant if isinstance(tenant, str) else None,
            attributes=attributes,
        )

    def _end(self, error: BaseException | None, output: object) -> None:
        run = self._run
        if run is None:
            return
        self._run = None
        answered = _answered(output)
        ending = ending_of(error, answered, run.last)
        if error is None and isinstance(output, DeferredToolRequests):
            # Waiting for approvals or external results: paused, neither an answer nor a bail.
            self.core.interrupt(_Paused(run.run_id))
            ending = replace(ending, stop_reason=semconv.STOP_REASON_INTERRUPTED)
        if ending.bail is not None:
            last = run.last
            self.core.react_loop_end(
                ReactLoopEndEvent(
                    run_id=run.run_id,
                    iteration_index=max(run.calls - 1, 0),
                    content_type=last.content_type if last is not None else "NoneType",
                    has_tool_calls=last is not None and last.tool_calls > 0,
                    tool_call_count=last.tool_calls if last is not None else 0,
                    termination_reason=ending.bail,
                )
            )
        self.core.agent_end(
            self._end_event(run, ending, output),
            error_type=ending.error_type,
            answered=answered if ending.outcome == "completed" else None,
        )

    def _end_event(self, run: _Run, ending: Ending, output: object) -> _End:
        final: str | None = None
        if self.core.capture_content and ending.outcome == "completed" and output is not None:
            final = output if isinstance(output, str) else json_text(output)[0]
        return _End(
            run_id=run.run_id,
            final_response=final,
            duration_ms=max(time.monotonic() - run.started, 0.0) * 1000.0,
            outcome=ending.outcome,
            stop_reason=ending.stop_reason,
            error_type=ending.error_type,
        )

    # --- model requests and tools -------------------------------------------------------------

    async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
        started = time.time_ns()
        try:
            response = await handler(request_context)
        except _REQUEST_CONTROL:
            raise
        except Exception as exc:
            self._guard("model_request", self._model_call, None, started, exc)
            raise
        self._guard("model_request", self._model_call, response, started, None)
        return response

    def _model_call(self, response: object, started: int, error: Exception | None) -> None:
        run = self._run
        if run is None:
            return
        turn = turn_of(response) if response is not None else None
        usage = getattr(response, "usage", None)
        tokens = {
            name: value
            for name in ("input_tokens", "output_tokens")
            if isinstance(value := getattr(usage, name, None), int)
        }
        model = getattr(response, "model_name", None)
        provider = getattr(response, "provider_name", None)
        self.core.llm_end(
            LLMEndEvent(
                model=model if isinstance(model, str) else "",
                output=turn.text if turn is not None and self.core.capture_content else "",
                usage=tokens,
                run_id=run.run_id,
                iteration_index=run.calls,
                outcome="error" if error is not None else "completed",
                stop_reason=turn.finish_reason if turn is not None else None,
                response_id=getattr(response, "provider_response_id", None),
            ),
            provider=provider if isinstance(provider, str) else None,
            start_time_ns=started,
            end_time_ns=time.time_ns(),
            error_type=type(error).__name__ if error is not None else None,
        )
        run.calls += 1
        if turn is not None:
            run.last = turn

    async def wrap_tool_execute(
        self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any
    ) -> Any:
        span = self._open_tool(call, args)
        run = self._run
        # While the tool runs, its span is the current one (an agent run inside it, or an HTTP
        # call, nests under it); both are restored in this frame, whatever the tool does.
        token = _TOOL_OF_RUN.set(run.run_id if run is not None else None)
        try:
            if span is None:
                result = await handler(args)
            else:
                with trace.use_span(
                    span, end_on_exit=False, record_exception=False, set_status_on_exception=False
                ):  # the error is recorded by type only, never its message
                    result = await handler(args)
        except BaseException as exc:
            self._guard("tool_end", self._close_tool, span, None, type(exc).__name__)
            raise
        finally:
            _TOOL_OF_RUN.reset(token)
        self._guard("tool_end", self._close_tool, span, result, None)
        return result

    def _open_tool(self, call: Any, args: Any) -> Any:
        try:
            run = self._run
            if run is None:
                return None
            attributes: dict[str, AttributeValue] = {}
            if self.core.capture_content:
                attributes.update(_captured(semconv.GEN_AI_TOOL_CALL_ARGUMENTS, args))
            call_id = getattr(call, "tool_call_id", None)
            return self.core.start_tool(
                run.run_id,
                str(getattr(call, "tool_name", "")),
                call_id=call_id if isinstance(call_id, str) else None,
                attributes=attributes,
                arguments=args,
            )
        except Exception as exc:
            self._failures.report("pydantic_ai.tool_start", exc)
            self.core.adapter_failed("pydantic_ai.tool_start")
            return None

    def _close_tool(self, span: Any, result: object, error_type: str | None) -> None:
        attributes: dict[str, AttributeValue] = {}
        if self.core.capture_content and error_type is None:
            attributes.update(_captured(semconv.GEN_AI_TOOL_CALL_RESULT, result))
        self.core.end_tool(span, error_type=error_type, attributes=attributes)

    # --- internals ------------------------------------------------------------------------------

    def _guard(self, kind: str, work: Callable[..., None], *args: Any) -> None:
        try:
            work(*args)
        except Exception as exc:  # never into the agent
            self._failures.report(f"pydantic_ai.{kind}", exc)
            self.core.adapter_failed(f"pydantic_ai.{kind}")
