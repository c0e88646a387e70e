"""``SymfonicTracer``: a ``haystack.tracing`` tracer recording Agent runs, model calls and tools.

``SymfonicTracer().install()`` (or ``haystack.enable_tracing(SymfonicTracer())``).
Haystack's tracer is its supported extension point for observing an Agent: every ``Agent.run``
and ``run_async`` (streaming included: a streaming callback is an argument of the same calls)
opens a ``haystack.agent.run`` span, each model call a ``haystack.agent.step.llm`` span and each
tool call a ``haystack.agent.step.tool`` span, and exceptions pass through them. Each agent span
is one ``invoke_agent`` run. The tracer installed before is kept and every span is handed on to
it, so Haystack's own tracing (OpenTelemetry, Datadog, logging) works as before.

The content the Agent attaches to its spans (its result, the model's replies, tool arguments)
is read in process whatever Haystack's content-tracing switch says, and handed on to the inner
tracer only under that switch; none of it leaves the process unless content capture is on.

The step cap, by structure: a capped Agent returns normally with ``exit_reason``
``max_agent_steps`` (or ``token_budget_exceeded``, Haystack's own budget hook), a silent bail
with stop reason ``recursion_limit``. ``length`` and ``content_filter`` exits are answers cut
short (stop reasons ``max_tokens`` and ``refusal``); a blank one is a bail.

The tenant is the ``tenant_scope`` around the call. Every callback is guarded; a failure is
counted, never raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import time
from collections.abc import Iterator
from typing import Any, Final

from haystack.tracing.tracer import Span, Tracer, enable_tracing
from haystack.tracing.tracer import tracer as haystack_tracer

from symfonic_otel.core.loops import DEFAULT_LOOP_THRESHOLD, DEFAULT_RUNAWAY_CALLS
from symfonic_otel.framework_runs import FrameworkRun, RunBook, Turn, loop_handler
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.haystack.read import answer_of, model_of, turn_of, usage_of

__all__ = ["SymfonicTracer"]

_NAME: Final = "SymfonicTracer"
_RUN: Final = "haystack.agent.run"
_LLM: Final = "haystack.agent.step.llm"
_TOOL: Final = "haystack.agent.step.tool"
_COMPONENT_NAME: Final = "haystack.component.name"
_TOOL_NAME: Final = "haystack.tool.name"
_TOOL_ERROR: Final = "haystack.tool.error"
_AGENT_OUTPUT: Final = "haystack.agent.output"
_LLM_OUTPUT: Final = "haystack.agent.step.llm.output"
_TOOL_INPUT: Final = "haystack.agent.step.tool.input"
_TOOL_OUTPUT: Final = "haystack.agent.step.tool.output"
_READ: Final = frozenset({_AGENT_OUTPUT, _LLM_OUTPUT, _TOOL_INPUT, _TOOL_OUTPUT})
# ``exit_reason`` values of a run its budget ended: the step cap and the token-budget hook.
_CAP_EXITS: Final = frozenset({"max_agent_steps", "token_budget_exceeded"})
_CUT_EXITS: Final = {"length": "max_tokens", "content_filter": "refusal"}
# A tool's failure reaches its span as a returned ``ToolInvocationError``, never raised there.
_TOOL_FAILURE: Final = "ToolInvocationError"
_MAX_ANSWER_CHARS: Final = 65_536
_END_TURN: Final = "end_turn"

_CURRENT: contextvars.ContextVar[_Span | None] = contextvars.ContextVar(
    "symfonic_haystack_span", default=None
)


class _Span(Span):
    """One Haystack span: handed on to the inner tracer's span, read on its way."""

    def __init__(self, inner: Span, owner: SymfonicTracer, name: str, parent: _Span | None) -> None:
        self.inner = inner
        self.owner = owner
        self.name = name
        self.parent: _Span | None = parent
        self.run_id: str = parent.run_id if parent is not None else ""
        self.component = ""
        self.started_ns = time.time_ns()
        self.tool: tuple[str, str] | None = None  # (name, call id) of a tool span
        self.tool_started = False
        self.tool_failed = False
        self.tool_result: object = None  # kept only under content capture
        self.turn: Turn | None = None
        self.model = ""
        self.usage: dict[str, int] = {}
        self.exit_reason: str | None = None
        self.answer: str | None = None

    def set_tag(self, key: str, value: Any) -> None:
        if key == _TOOL_ERROR and value is True:
            self.tool_failed = True
        self.inner.set_tag(key, value)

    def set_content_tag(self, key: str, value: Any) -> None:
        if key in _READ:
            self.owner._book.guard("content", self.owner._read, self, key, value)
        self.inner.set_content_tag(key, value)

    def raw_span(self) -> Any:
        return self.inner.raw_span()

    def get_correlation_data_for_logs(self) -> dict[str, Any]:
        data: dict[str, Any] = self.inner.get_correlation_data_for_logs()
        return data


class SymfonicTracer(Tracer):
    """A Haystack tracer recording every Agent run; see the module docstring.

    ``inner`` is the tracer every span is handed on to (``install()`` takes the one installed
    now). ``handler`` shares an ``OTelCallbackHandler`` with other adapters; by default one on
    the global providers is built.
    """

    def __init__(
        self,
        *,
        handler: OTelCallbackHandler | None = None,
        inner: Tracer | None = None,
        max_open_runs: int = 10_000,
        loop_threshold: int = DEFAULT_LOOP_THRESHOLD,
        runaway_calls: int = DEFAULT_RUNAWAY_CALLS,
    ) -> None:
        handler = loop_handler(_NAME, handler, loop_threshold, runaway_calls)
        self._book = RunBook(handler, _NAME, max_open_runs)
        self.inner: Tracer = inner if inner is not None else haystack_tracer.actual_tracer
        self._ids = itertools.count(1)

    @property
    def handler(self) -> OTelCallbackHandler:
        return self._book.handler

    @property
    def open_runs(self) -> int:
        return self._book.open_runs

    def install(self) -> SymfonicTracer:
        """Make this Haystack's tracer, handing spans on to the one installed before."""
        current = haystack_tracer.actual_tracer
        if current is not self:
            self.inner = current
            enable_tracing(self)
        return self

    def uninstall(self) -> None:
        """Give Haystack its previous tracer back and close the runs still open."""
        if haystack_tracer.actual_tracer is self:
            enable_tracing(self.inner)
        self._book.guard("close", self._book.close_all)

    # --- haystack.tracing.Tracer -------------------------------------------------------------

    @contextlib.contextmanager
    def trace(
        self,
        operation_name: str,
        tags: dict[str, Any] | None = None,
        parent_span: Span | None = None,
    ) -> Iterator[Span]:
        parent = parent_span if isinstance(parent_span, _Span) else None
        inner_parent = parent.inner if parent is not None else parent_span
        with self.inner.trace(operation_name, tags=tags, parent_span=inner_parent) as inner:
            span = _Span(inner, self, operation_name, parent)
            token = _CURRENT.set(span)
            try:
                self._book.guard("open", self._opened, span, tags)
                yield span
            except BaseException as exc:
                self._book.guard("close", self._closed, span, exc)
                raise
            else:
                self._book.guard("close", self._closed, span, None)
            finally:
                with contextlib.suppress(ValueError):  # exited in another context: never raise
                    _CURRENT.reset(token)

    def current_span(self) -> Span | None:
        current = _CURRENT.get()
        return current if current is not None else self.inner.current_span()

    # --- spans -------------------------------------------------------------------------------

    def _opened(self, span: _Span, tags: dict[str, Any] | None) -> None:
        tags = tags or {}
        component = tags.get(_COMPONENT_NAME)
        span.component = component[:128] if isinstance(component, str) else ""
        if span.name == _RUN:
            span.run_id = f"haystack-{next(self._ids)}"
            # In a pipeline the agent's span sits under its component's: the agent's name.
            self._book.start(span.run_id, span.parent.component if span.parent else "")
        elif span.name == _TOOL:
            name = tags.get(_TOOL_NAME)
            span.tool = (name if isinstance(name, str) else "", f"tool-{next(self._ids)}")

    def _read(self, span: _Span, key: str, value: Any) -> None:
        if key == _AGENT_OUTPUT and span.name == _RUN:
            span.exit_reason, answer = answer_of(value)
            span.answer = answer[:_MAX_ANSWER_CHARS] if answer is not None else None
        elif key == _LLM_OUTPUT and span.name == _LLM:
            span.turn, span.model, span.usage = turn_of(value), model_of(value), usage_of(value)
        elif key == _TOOL_INPUT and span.name == _TOOL:
            self._start_tool(span, value)
        elif key == _TOOL_OUTPUT and span.name == _TOOL and self.handler.capture_content:
            span.tool_result = value

    def _start_tool(self, span: _Span, args: object) -> None:
        run = self._book.get(span.run_id)
        if run is None or span.tool is None or span.tool_started:
            return
        span.tool_started = True
        self._book.start_tool(run, span.tool[0], span.tool[1], args)

    def _closed(self, span: _Span, exc: BaseException | None) -> None:
        run = self._book.get(span.run_id)
        if run is None:
            return
        if span.name == _LLM:
            self._model_call(run, span, exc)
        elif span.name == _TOOL and span.tool is not None:
            self._start_tool(span, None)
            error = type(exc).__name__[:128] if exc is not None else None
            if error is None and span.tool_failed:
                error = _TOOL_FAILURE
            self._book.end_tool(run, span.tool[1], span.tool_result, error)
        elif span.name == _RUN:
            self._end_run(span, exc)

    def _model_call(self, run: FrameworkRun, span: _Span, exc: BaseException | None) -> None:
        self._book.model_call(
            run,
            None if exc is not None else span.turn,
            model=span.model,
            usage=span.usage,
            started_ns=span.started_ns,
            error_type=type(exc).__name__[:128] if exc is not None else None,
        )

    def _end_run(self, span: _Span, exc: BaseException | None) -> None:
        if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt)):
            self._book.end(span.run_id, "cancelled")
        elif exc is not None:
            self._book.end(span.run_id, "error", error_type=type(exc).__name__[:128])
        elif span.exit_reason in _CAP_EXITS:
            self._book.end(span.run_id, "capped")
        else:
            stop = _CUT_EXITS.get(span.exit_reason or "", _END_TURN)
            self._book.end(span.run_id, "answered", answer=span.answer, stop_reason=stop)
