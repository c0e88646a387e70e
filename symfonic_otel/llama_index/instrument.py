"""``SymfonicLlamaIndex``: span and event handlers on LlamaIndex's instrumentation dispatcher.

``SymfonicLlamaIndex(handler).instrument()`` adds both to the root dispatcher (LlamaIndex's
supported extension point; nothing is patched). Each agent workflow run (``FunctionAgent``,
``ReActAgent``, ``AgentWorkflow``) is a run span; its model calls (``LLMChatStart`` /
``LLMChatEnd`` events) are ``chat`` calls; its ``call_tool`` steps ``execute_tool`` spans.

The step cap is read from the workflow's structure: LlamaIndex counts one iteration per
``parse_agent_output`` step (the step fed an ``AgentOutput``) and stops at ``max_iterations``.
With ``early_stopping_method="force"`` that step raises ``WorkflowRuntimeError``; with
``"generate"`` it makes one more model call itself and the run returns normally. So a run whose
iteration count reached its budget is a silent bail with stop reason ``recursion_limit`` when it
raised ``WorkflowRuntimeError`` or made that call, and the call is the run's synthesis fallback
(node ``react_synthesize_fallback``).

The tenant is the ``tenant_scope`` around the run, else the ``tenant_id`` of LlamaIndex's
``instrument_tags``. Every hook is guarded: a failure is counted in the handler's dropped events
and never reaches the agent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from llama_index.core.agent.workflow import AgentWorkflow, BaseWorkflowAgent
from llama_index.core.agent.workflow.workflow_events import AgentOutput, ToolCall, ToolCallResult
from llama_index.core.instrumentation.events.llm import (
    LLMChatEndEvent,
    LLMChatInProgressEvent,
    LLMChatStartEvent,
)
from llama_index_instrumentation import get_dispatcher
from llama_index_instrumentation.dispatcher import Dispatcher, active_instrument_tags
from opentelemetry.util.types import AttributeValue
from workflows.errors import WorkflowRuntimeError

from symfonic_otel import semconv
from symfonic_otel.core.loops import DEFAULT_LOOP_THRESHOLD, DEFAULT_RUNAWAY_CALLS
from symfonic_otel.core.run_end import AdapterRunEnd
from symfonic_otel.events import AgentStartEvent, LLMEndEvent, TerminationReason
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.invocation import loop_handler
from symfonic_otel.llama_index import reading
from symfonic_otel.llama_index.hooks import Events, Spans
from symfonic_otel.llama_index.runs import Call, LlamaRun, RunIndex
from symfonic_otel.read.content import json_text
from symfonic_otel.read.turns import bail_event, captured

__all__ = ["SymfonicLlamaIndex"]

_TENANT_TAG: Final = "tenant_id"
_AGENTS: Final = (BaseWorkflowAgent, AgentWorkflow)


def _positive(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"SymfonicLlamaIndex: {name} must be a positive int, got {value!r}")
    return value


def _agent_name(workflow: object) -> str:
    for attribute in ("name", "root_agent"):  # an agent's name; an AgentWorkflow's root agent
        value = getattr(workflow, attribute, None)
        if isinstance(value, str) and value:
            return value
    return ""


class SymfonicLlamaIndex:
    """Records LlamaIndex agent runs, model calls, tools and step caps; see the module docstring.

    ``handler`` shares an ``OTelCallbackHandler`` (say, with a LangChain adapter); by default one
    on the global providers is built. ``max_runs`` bounds the runs followed at once (the oldest
    is ended as abandoned), ``max_spans_per_run`` the spans indexed per run.
    """

    def __init__(
        self,
        handler: OTelCallbackHandler | None = None,
        *,
        max_runs: int = 10_000,
        max_spans_per_run: int = 10_000,
        loop_threshold: int = DEFAULT_LOOP_THRESHOLD,
        runaway_calls: int = DEFAULT_RUNAWAY_CALLS,
    ) -> None:
        if handler is not None and not isinstance(handler, OTelCallbackHandler):
            raise TypeError(
                "SymfonicLlamaIndex: handler must be an OTelCallbackHandler, "
                f"got {type(handler).__name__}"
            )
        self.core = loop_handler("SymfonicLlamaIndex", handler, loop_threshold, runaway_calls)
        self._index = RunIndex(
            _positive("max_runs", max_runs), _positive("max_spans_per_run", max_spans_per_run)
        )
        self._spans = Spans()
        self._spans._owner = self
        self._events = Events()
        self._events._owner = self
        self._dispatcher: Dispatcher | None = None
        # Hooks come from worker threads too (sync steps, parallel tools): one at a time.
        self._lock = threading.RLock()

    # --- installation -------------------------------------------------------------------------

    def instrument(self, dispatcher: Dispatcher | None = None) -> SymfonicLlamaIndex:
        """Add the handlers to ``dispatcher`` (default: LlamaIndex's root dispatcher)."""
        if self._dispatcher is None:
            target = dispatcher if dispatcher is not None else get_dispatcher()
            target.add_span_handler(self._spans)
            target.add_event_handler(self._events)
            self._dispatcher = target
        return self

    def uninstrument(self) -> None:
        """Remove the handlers and end the runs still open as abandoned."""
        target, self._dispatcher = self._dispatcher, None
        if target is not None:
            target.span_handlers = [h for h in target.span_handlers if h is not self._spans]
            target.event_handlers = [h for h in target.event_handlers if h is not self._events]
        with self._lock:
            runs = self._index.drain()
        for run in runs:
            self.guard("abandon", self._abandon, run)

    @property
    def open_runs(self) -> int:
        return len(self._index)

    # --- spans ----------------------------------------------------------------------------------

    def enter(
        self, span_id: str, bound: Any, instance: object, parent_id: str | None, tags: object
    ) -> None:
        if isinstance(instance, _AGENTS) and "start_event" in bound.arguments:
            self._start(span_id, bound.arguments.get("start_event"), instance, parent_id, tags)
            return
        run = self._index.owner(parent_id)
        if run is None or parent_id is None:
            return
        step = self._index.index(run, span_id, parent_id)
        if step != span_id:
            return  # not a step of the run (a model call, a tool's own span...)
        event = bound.arguments.get("ev")
        if isinstance(event, AgentOutput):
            run.parses += 1
            run.last = reading.step_turn(event)
            if run.parses >= run.budget:  # LlamaIndex's own test: num_iterations >= max
                run.cap_step = span_id
        elif isinstance(event, ToolCall) and not isinstance(event, ToolCallResult):
            self._open_tool(run, span_id, event)

    def exit(self, span_id: str, result: object, error: BaseException | None) -> None:
        run = self._index.get(span_id)
        if run is not None:
            self._index.pop(span_id)
            self._end(run, result, error)
            return
        run = self._index.owner(span_id)
        if run is None:
            return
        tool = run.tools.pop(span_id, None)
        if tool is not None:
            self._close_tool(tool, result, error)
        if span_id in run.pending:
            if error is None:  # a streamed call's span ends when its stream is returned
                run.streamed.add(span_id)
                return
            self._record_call(run, run.pending.pop(span_id), None, type(error).__name__)
        self._index.release(run, span_id)

    def _start(
        self,
        span_id: str,
        start_event: object,
        workflow: object,
        parent_id: str | None,
        tags: object,
    ) -> None:
        run = LlamaRun(span_id, reading.budget_of(start_event), _agent_name(workflow))
        for old in self._index.add(run):
            self.core.adapter_failed("llama_index.run_evicted")
            self._abandon(old)
        attributes: dict[str, AttributeValue] = {}
        if run.agent:
            attributes[semconv.GEN_AI_AGENT_NAME] = run.agent
        outer = self._index.owner(parent_id)
        if outer is not None:  # an agent run inside another's tool
            attributes[semconv.RUN_PARENT_ID] = outer.key
        if not isinstance(tags, Mapping):  # the run span is entered with the tags in context
            tags = active_instrument_tags.get()
        tenant = tags.get(_TENANT_TAG) if isinstance(tags, Mapping) else None
        query = ""
        if self.core.capture_content:
            message = getattr(start_event, "get", lambda *_: None)("user_msg", None)
            query = message if isinstance(message, str) else getattr(message, "content", "") or ""
        self.core.agent_start(
            AgentStartEvent(query=query, run_id=span_id),
            tenant_id=tenant if isinstance(tenant, str) else None,
            attributes=attributes,
        )

    def _end(self, run: LlamaRun, result: object, error: BaseException | None) -> None:
        for tool in run.tools.values():
            self.core.end_tool(tool, error_type=semconv.OTHER_VALUE)
        run.tools.clear()
        output = getattr(result, "result", None)
        text = reading.step_turn(output).text if isinstance(output, AgentOutput) else ""
        if error is None and output is not None and not isinstance(output, AgentOutput):
            text = output if isinstance(output, str) else json_text(output)[0]
        # force raises; generate makes the fallback call (which may raise in turn)
        capped = run.cap_step is not None and (
            isinstance(error, WorkflowRuntimeError) or run.fallbacks > 0
        )
        answered = bool(text.strip())
        if error is not None:
            outcome, stop, error_type = "error", semconv.STOP_REASON_ERROR, type(error).__name__
        elif result is None:  # the user cancelled the workflow: it exits with no result
            outcome, stop, error_type = "cancelled", semconv.STOP_REASON_INTERRUPTED, None
        else:
            outcome, stop, error_type = "completed", "end_turn", None
        bail: TerminationReason | None = None
        if capped:
            stop, bail = semconv.STOP_REASON_RECURSION_LIMIT, "tool_calls_with_no_text"
        elif outcome == "completed" and not answered:
            last = run.last
            bail = (
                "tool_calls_with_no_text"
                if last and last.tool_calls
                else "no_content_no_tool_calls"
            )
        if bail is not None:
            self.core.react_loop_end(bail_event(run.key, run.parses - 1, run.last, bail))
        self.core.agent_end(
            AdapterRunEnd(
                run_id=run.key,
                outcome=outcome,  # type: ignore[arg-type]
                final_response=text if self.core.capture_content and answered else None,
                stop_reason=stop,
                error_type=error_type,
            ),
            error_type=error_type,
            answered=answered if outcome == "completed" else None,
        )

    def _abandon(self, run: LlamaRun) -> None:
        for tool in run.tools.values():
            self.core.end_tool(tool, error_type=semconv.OTHER_VALUE)
        self.core.agent_end(AdapterRunEnd(run_id=run.key, outcome="abandoned"))

    # --- events: model calls --------------------------------------------------------------------

    def event(self, event: object) -> None:
        if not isinstance(event, LLMChatStartEvent | LLMChatInProgressEvent | LLMChatEndEvent):
            return
        span_id = event.span_id
        run = self._index.owner(span_id)
        if run is None or span_id is None:
            return
        if isinstance(event, LLMChatStartEvent):
            model = reading.model_of(event.model_dict)
            if any(outer in run.pending for outer in self._index.ancestors(run, span_id)):
                return  # a chat method calling another (``achat`` -> ``chat``): one call
            step = run.spans.get(span_id, (None, ""))[0]
            fallback = step is not None and step == run.cap_step
            run.pending[span_id] = Call(
                time.time_ns(),
                time.monotonic(),
                model,
                fallback,
            )
            return
        call = run.pending.get(span_id)
        if call is None:
            return
        if isinstance(event, LLMChatInProgressEvent):
            if call.first_chunk_s is None:
                call.first_chunk_s = max(time.monotonic() - call.start_monotonic, 0.0)
            return
        del run.pending[span_id]
        self._record_call(run, call, event.response, None)
        if span_id in run.streamed:  # its span ended before the stream did: forget it now
            run.streamed.discard(span_id)
            self._index.release(run, span_id)

    def _record_call(
        self, run: LlamaRun, call: Call, response: object, error_type: str | None
    ) -> None:
        turn = reading.response_turn(response) if response is not None else None
        if call.fallback:
            run.fallbacks += 1
        self.core.llm_end(
            LLMEndEvent(
                model=call.model,
                output=turn.text if turn is not None else "",  # the core gates it on capture
                usage=reading.usage_of(response) if response is not None else {},
                run_id=run.key,
                node_name=semconv.NODE_SYNTHESIZE_FALLBACK if call.fallback else "",
                iteration_index=run.calls,
                outcome="error" if error_type is not None else "completed",
                error_type=error_type,
            ),
            start_time_ns=call.start_ns,
            end_time_ns=time.time_ns(),
            error_type=error_type,
            time_to_first_chunk_s=call.first_chunk_s,
            attributes={semconv.GEN_AI_AGENT_NAME: run.agent} if run.agent else None,
        )
        run.calls += 1

    # --- tools ----------------------------------------------------------------------------------

    def _open_tool(self, run: LlamaRun, span_id: str, event: ToolCall) -> None:
        attributes: dict[str, AttributeValue] = {}
        if self.core.capture_content:
            attributes.update(captured(semconv.GEN_AI_TOOL_CALL_ARGUMENTS, event.tool_kwargs))
        span = self.core.start_tool(
            run.key,
            event.tool_name if isinstance(event.tool_name, str) else "",
            call_id=event.tool_id if isinstance(event.tool_id, str) and event.tool_id else None,
            attributes=attributes,
            arguments=event.tool_kwargs,
        )
        if span is not None:
            run.tools[span_id] = span

    def _close_tool(self, span: Any, result: object, error: BaseException | None) -> None:
        output = getattr(result, "tool_output", None)
        failed = error is not None or getattr(output, "is_error", False) is True
        attributes: dict[str, AttributeValue] = {}
        if self.core.capture_content and not failed and output is not None:
            attributes.update(
                captured(semconv.GEN_AI_TOOL_CALL_RESULT, getattr(output, "content", ""))
            )
        self.core.end_tool(
            span,
            error_type=(type(error).__name__ if error is not None else semconv.TOOL_ERROR_TYPE)
            if failed
            else None,
            attributes=attributes,
        )

    # --- internals ------------------------------------------------------------------------------

    def guard(self, kind: str, work: Callable[..., None], *args: Any) -> None:
        try:
            with self._lock:
                work(*args)
        except Exception as exc:  # never into the agent
            self.core.adapter_failed(f"llama_index.{kind}", exc)
