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

import time
from collections.abc import Mapping
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
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.invocation import Ending, FrameworkRun, RunBook, loop_handler, positive
from symfonic_otel.invocation.adapter import BookAdapter
from symfonic_otel.llama_index import reading
from symfonic_otel.llama_index.hooks import Events, Spans
from symfonic_otel.llama_index.steps import Call, Steps
from symfonic_otel.read.content import json_text

__all__ = ["SymfonicLlamaIndex"]

_NAME: Final = "SymfonicLlamaIndex"
_TENANT_TAG: Final = "tenant_id"
_AGENTS: Final = (BaseWorkflowAgent, AgentWorkflow)


def _agent_name(workflow: object) -> str:
    for attribute in ("name", "root_agent"):  # an agent's name; an AgentWorkflow's root agent
        value = getattr(workflow, attribute, None)
        if isinstance(value, str) and value:
            return value
    return ""


def _steps(run: FrameworkRun) -> Steps:
    facts = run.facts
    assert isinstance(facts, Steps)  # set at the run's start
    return facts


def _ancestors(run: FrameworkRun, span_id: str) -> list[str]:
    """The indexed spans above ``span_id`` in ``run``, innermost first."""
    found: list[str] = []
    parent = (run.spans.get(span_id) or ("", ""))[1]
    while parent in run.spans and len(found) < len(run.spans):
        found.append(parent)
        parent = run.spans[parent][1]
    return found


class SymfonicLlamaIndex(BookAdapter):
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
        core = loop_handler(_NAME, handler, loop_threshold, runaway_calls)
        self._book = RunBook(
            core,
            _NAME,
            positive(_NAME, "max_runs", max_runs),
            max_keys=positive(_NAME, "max_spans_per_run", max_spans_per_run),
            evicted="run_evicted",
            unfinished_tool_error=semconv.OTHER_VALUE,
            prefix="llama_index",
        )
        self.guard = self._book.guard
        self._spans = Spans()
        self._spans._owner = self
        self._events = Events()
        self._events._owner = self
        self._dispatcher: Dispatcher | None = None

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
        self.guard("abandon", self._book.close_all)

    # --- spans ----------------------------------------------------------------------------------

    def enter(
        self, span_id: str, bound: Any, instance: object, parent_id: str | None, tags: object
    ) -> None:
        if isinstance(instance, _AGENTS) and "start_event" in bound.arguments:
            self._start(span_id, bound.arguments.get("start_event"), instance, parent_id, tags)
            return
        runs = self._book.runs
        run = runs.owner(parent_id)
        if run is None or parent_id is None:
            return
        step = span_id if parent_id == run.run_id else (run.spans.get(parent_id) or (None,))[0]
        if step is None or not runs.index(run, span_id, (step, parent_id)) or step != span_id:
            return  # not a step of the run (a model call, a tool's own span...)
        event = bound.arguments.get("ev")
        if isinstance(event, AgentOutput):
            steps = _steps(run)
            steps.parses += 1
            run.last = reading.step_turn(event)
            if steps.parses >= steps.budget:  # LlamaIndex's own test: num_iterations >= max
                steps.cap_step = span_id
        elif isinstance(event, ToolCall) and not isinstance(event, ToolCallResult):
            tool_id = event.tool_id if isinstance(event.tool_id, str) else ""
            self._book.tools.start(
                run,
                event.tool_name if isinstance(event.tool_name, str) else "",
                tool_id,
                event.tool_kwargs,
                key=span_id,
            )

    def exit(self, span_id: str, result: object, error: BaseException | None) -> None:
        run = self._book.get(span_id)
        if run is not None:
            self._end(run, result, error)
            return
        run = self._book.runs.owner(span_id)
        if run is None:
            return
        if span_id in run.tools:
            output = getattr(result, "tool_output", None)
            failed = error is not None or getattr(output, "is_error", False) is True
            error_type = type(error).__name__ if error is not None else semconv.TOOL_ERROR_TYPE
            content = getattr(output, "content", "")
            self._book.tools.end(
                run, span_id, content, error_type if failed else None,
                capture_result=output is not None,
            )  # fmt: skip
        steps = _steps(run)
        if span_id in steps.pending:
            if error is None:  # a streamed call's span ends when its stream is returned
                steps.streamed.add(span_id)
                return
            self._record_call(run, steps.pending.pop(span_id), None, type(error).__name__)
        self._book.runs.release(span_id)

    def _start(
        self,
        span_id: str,
        start_event: object,
        workflow: object,
        parent_id: str | None,
        tags: object,
    ) -> None:
        attributes: dict[str, AttributeValue] = {}
        outer = self._book.runs.owner(parent_id)
        if outer is not None:  # an agent run inside another's tool
            attributes[semconv.RUN_PARENT_ID] = outer.run_id
        if not isinstance(tags, Mapping):  # the run span is entered with the tags in context
            tags = active_instrument_tags.get()
        tenant = tags.get(_TENANT_TAG) if isinstance(tags, Mapping) else None
        message = getattr(start_event, "get", lambda *_: None)("user_msg", None)
        query = message if isinstance(message, str) else getattr(message, "content", "") or ""
        self._book.start(
            span_id,
            _agent_name(workflow),
            tenant=tenant if isinstance(tenant, str) else None,
            query=query if isinstance(query, str) else "",
            attributes=attributes,
            facts=Steps(reading.budget_of(start_event)),
        )

    def _end(self, run: FrameworkRun, result: object, error: BaseException | None) -> None:
        output = getattr(result, "result", None)
        text = reading.step_turn(output).text if isinstance(output, AgentOutput) else ""
        if error is None and output is not None and not isinstance(output, AgentOutput):
            text = output if isinstance(output, str) else json_text(output)[0]
        # force raises; generate makes the fallback call (which may raise in turn)
        capped = _steps(run).cap_step is not None and (
            isinstance(error, WorkflowRuntimeError) or run.fallbacks > 0
        )
        ending: Ending
        if error is not None:
            ending = "capped_raised" if capped else "error"
        elif result is None:  # the user cancelled the workflow: it exits with no result
            ending = "cancelled"
        else:
            ending = "capped" if capped else "answered"
        error_type = type(error).__name__ if error is not None else None
        self._book.end(run.run_id, ending, answer=text, error_type=error_type)

    # --- events: model calls --------------------------------------------------------------------

    def event(self, event: object) -> None:
        if not isinstance(event, LLMChatStartEvent | LLMChatInProgressEvent | LLMChatEndEvent):
            return
        span_id = event.span_id
        run = self._book.runs.owner(span_id)
        if run is None or span_id is None:
            return
        steps = _steps(run)
        if isinstance(event, LLMChatStartEvent):
            model = reading.model_of(event.model_dict)
            if any(outer in steps.pending for outer in _ancestors(run, span_id)):
                return  # a chat method calling another (``achat`` -> ``chat``): one call
            step = (run.spans.get(span_id) or (None,))[0]
            fallback = step is not None and step == steps.cap_step
            steps.pending[span_id] = Call(time.time_ns(), time.monotonic(), model, fallback)
            return
        call = steps.pending.get(span_id)
        if call is None:
            return
        if isinstance(event, LLMChatInProgressEvent):
            if call.first_chunk_s is None:
                call.first_chunk_s = max(time.monotonic() - call.start_monotonic, 0.0)
            return
        del steps.pending[span_id]
        self._record_call(run, call, event.response, None)
        if span_id in steps.streamed:  # its span ended before the stream did: forget it now
            steps.streamed.discard(span_id)
            self._book.runs.release(span_id)

    def _record_call(
        self, run: FrameworkRun, call: Call, response: object, error_type: str | None
    ) -> None:
        self._book.model_call(
            run,
            reading.response_turn(response) if response is not None else None,
            model=call.model,
            usage=reading.usage_of(response) if response is not None else {},
            started_ns=call.start_ns,
            error_type=error_type,
            node=semconv.NODE_SYNTHESIZE_FALLBACK if call.fallback else "",
            first_chunk_s=call.first_chunk_s,
            attributes={semconv.GEN_AI_AGENT_NAME: run.agent} if run.agent else None,
        )
