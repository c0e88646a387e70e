"""``ReactAgent``: the reference ReAct loop and its termination contract.

One string comes out of every run, ``final_response``, however the loop ended:

* the model answered (no tool calls): its text;
* the loop was forced to finish on a turn that requested tools (loop cut, call cap, or a
  provider documented to end turns with text and tool calls): the text of that turn, salvaged;
* no text at all: a *silent bail* -- ``""``, an INFO log line and ``ReactLoopEndEvent``, and,
  with ``synthesize_on_empty_final`` on the non-streaming path, one recovery completion without
  tools that summarises the work done.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Iterable
from contextlib import aclosing
from typing import Any, Final

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool

from symfonic_otel.agent.bail import SILENT_BAIL_LOG_EVENT, report_silent_bail
from symfonic_otel.agent.calls import ModelCalls, RunState
from symfonic_otel.agent.config import FrameworkConfig
from symfonic_otel.agent.dispatch import CallbackDispatcher
from symfonic_otel.agent.exits import ERROR, INTERRUPTED, run_exit, stop_note
from symfonic_otel.agent.fabrication import FabricationFinding, heuristic_fabrication_detector
from symfonic_otel.agent.fabrication_check import FabricationChecker
from symfonic_otel.agent.flatten import flatten_content_blocks, message_text
from symfonic_otel.agent.history import INTERRUPTED as INTERRUPTED_RESULT
from symfonic_otel.agent.history import NOT_RUN, repair_history
from symfonic_otel.agent.prompts import CONTINUE_PROMPT, SYNTHESIS_INSTRUCTION, transcript
from symfonic_otel.agent.resolver import ForcedToolChoiceResolver, ToolBinding
from symfonic_otel.agent.response import AgentResponse
from symfonic_otel.agent.streaming import (
    StreamEvent,
    StreamFinal,
    StreamTextDelta,
    StreamToolCall,
    StreamToolResult,
)
from symfonic_otel.agent.termination import Route, reported_stop_reason, tools_condition
from symfonic_otel.agent.tools import ToolRunner, ensure_call_ids
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    TerminationOutcome,
    TerminationReason,
)
from symfonic_otel.logs import FailureLog
from symfonic_otel.semconv import NODE_REACT, NODE_SYNTHESIZE_FALLBACK

__all__ = ["CONTINUE_PROMPT", "SILENT_BAIL_LOG_EVENT", "ReactAgent"]

SYNTHESIS_FAILED: Final = "agent.synthesis_failed"
_MODEL_HINT_ATTRS: Final = (
    "model_name",
    "model",
    "model_id",
    "openai_api_base",
    "base_url",
    "anthropic_api_url",
)


def _model_attr_name(model: object) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def _model_hints(model: object) -> tuple[str, ...]:
    """The chat model's configured names and endpoint: how ``auto`` recognises a provider."""
    hints = [type(model).__name__]
    for attr in _MODEL_HINT_ATTRS:
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            hints.append(value)
    return tuple(hints)


class ReactAgent:
    """A ReAct loop over a langchain-core chat model and tools, emitting Symfonic events.

    ``run`` is the non-streaming path (salvage and synthesis), ``stream`` the streaming one
    (salvage only). Both accept ``history``: a caller-owned message list the run appends to in
    place, left valid (every tool call answered) even when the run is interrupted. Loop
    detection and the call cap look only at what the run itself adds to it.
    ``tool_choice_resolver`` (seed 001) is asked before every loop model call which tool to
    force, if any.
    """

    def __init__(
        self,
        model: BaseChatModel,
        tools: Iterable[BaseTool | Callable[..., Any]] = (),
        *,
        config: FrameworkConfig | None = None,
        callbacks: Iterable[object] = (),
        name: str = "symfonic",
        tool_choice_resolver: ForcedToolChoiceResolver | None = None,
    ) -> None:
        if config is None:
            config = FrameworkConfig()
        elif not isinstance(config, FrameworkConfig):
            raise TypeError(f"config must be a FrameworkConfig, got {type(config).__name__}")
        if tool_choice_resolver is not None and not callable(
            getattr(tool_choice_resolver, "resolve", None)
        ):
            raise TypeError("tool_choice_resolver must have an async resolve(state, messages)")
        self.model = model
        self._dispatch = CallbackDispatcher(callbacks)
        self._tools = ToolRunner(tools, self._dispatch)
        self.tools: tuple[BaseTool, ...] = self._tools.tools
        self._failures = FailureLog()
        self._binding = ToolBinding(model, self.tools, tool_choice_resolver, self._failures)
        self.config = config
        self.name = name
        self._calls = ModelCalls(self._dispatch, _model_attr_name(model), self._failures)
        self._model_hints = _model_hints(model)
        self._fabrication = FabricationChecker(
            config,
            config.fabrication_detector or heuristic_fabrication_detector,
            self._dispatch,
            self._calls,
            model,
            self._failures,
        )

    @property
    def failures(self) -> FailureLog:
        """Failures the loop tolerated (resolver, forced binding, recovery calls), by kind."""
        return self._failures

    # --- entry points ------------------------------------------------------------------------

    async def run(
        self,
        query: str,
        *,
        run_id: str | None = None,
        history: list[BaseMessage] | None = None,
    ) -> AgentResponse:
        """Run to the end and return the response (salvage and, if configured, synthesis)."""
        response: AgentResponse | None = None
        async with aclosing(self._lifecycle(query, run_id, history, streaming=False)) as events:
            async for event in events:
                if isinstance(event, StreamFinal):
                    response = event.response
        if response is None:  # pragma: no cover - the lifecycle always ends with StreamFinal
            raise RuntimeError("the agent loop ended without a response")
        return response

    def run_sync(
        self, query: str, *, run_id: str | None = None, history: list[BaseMessage] | None = None
    ) -> AgentResponse:
        """``run`` for synchronous code; not callable from inside a running event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(query, run_id=run_id, history=history))
        raise RuntimeError("run_sync() was called inside a running event loop; await run() instead")

    def stream(
        self,
        query: str,
        *,
        run_id: str | None = None,
        history: list[BaseMessage] | None = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Stream text deltas, tool calls and results, then ``StreamFinal`` (never synthesised)."""
        return self._lifecycle(query, run_id, history, streaming=True)

    # --- run lifecycle: exactly one AgentStart and one AgentEnd ------------------------------

    async def _lifecycle(
        self,
        query: str,
        run_id: str | None,
        history: list[BaseMessage] | None,
        *,
        streaming: bool,
    ) -> AsyncGenerator[StreamEvent, None]:
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        run = RunState(
            run_id or uuid.uuid4().hex, query, history if history is not None else [], streaming
        )
        dispatch = self._dispatch
        started = time.perf_counter()
        outcome: TerminationOutcome = "completed"
        error_type: str | None = None
        try:
            await dispatch.send(
                "on_agent_start", lambda: AgentStartEvent(query=query, run_id=run.run_id)
            )
            # The history given is made valid once, before the run's own messages begin.
            repair_history(run.messages)
            run.query_message = HumanMessage(content=query)
            run.messages.append(run.query_message)
            async with aclosing(self._loop(run)) as steps:
                async for event in steps:
                    yield event
        except Exception as exc:
            outcome = "error"
            error_type = type(exc).__name__
            raise
        except BaseException:
            # KeyboardInterrupt, CancelledError, or a stream consumer that stopped reading
            # (GeneratorExit). After the final event has been handed out the run is complete.
            outcome = "completed" if run.response is not None else "cancelled"
            raise
        finally:
            if outcome != "completed":
                repair_history(run.messages, INTERRUPTED_RESULT)
            response = run.response
            if outcome == "error":
                stop_reason: str | None = ERROR
            elif outcome == "cancelled":
                stop_reason = INTERRUPTED
            else:
                stop_reason = response.run_stop_reason if response is not None else None
            await dispatch.send(
                "on_agent_end",
                lambda: AgentEndEvent(
                    run_id=run.run_id,
                    final_response=run.answer if response is not None else None,
                    duration_ms=(time.perf_counter() - started) * 1000.0,
                    node_count=run.nodes,
                    outcome=outcome,
                    stop_reason=stop_reason,
                    error_type=error_type,
                ),
            )

    # --- the loop ----------------------------------------------------------------------------

    async def _loop(self, run: RunState) -> AsyncGenerator[StreamEvent, None]:
        config = self.config
        messages = run.messages
        streaming = run.streaming
        answer_prefix = ""  # text of turns cut at the token limit (or paused), continued since
        recoveries = 0  # consecutive length recoveries: a tool round ends the streak
        while True:
            repair_history(messages)
            runnable, forced = await self._binding.for_iteration(run)
            if streaming:
                message: AIMessage | None = None
                async with aclosing(
                    self._calls.stream(
                        run, runnable, messages, NODE_REACT, forced_tool_choice=forced
                    )
                ) as parts:
                    async for part in parts:
                        if isinstance(part, StreamTextDelta):
                            yield part
                        else:
                            message = part
                if message is None:  # pragma: no cover - stream() always ends with one
                    raise RuntimeError("the model stream ended without a message")
            else:
                message = await self._calls.call(
                    run, runnable, messages, NODE_REACT, forced_tool_choice=forced
                )
            ensure_call_ids(message)
            run.loop_calls += 1
            messages.append(message)
            route = tools_condition(
                messages,
                config,
                model_calls=run.loop_calls,
                length_recoveries_used=recoveries,
                run_start=run.run_start(),
                model_hints=self._model_hints,
            )
            action = route.action
            if action == "tools":
                answer_prefix = ""
                recoveries = 0
                if streaming:
                    for call in message.tool_calls:
                        yield StreamToolCall(
                            call.get("id") or "", call["name"], call["args"], run.model_calls - 1
                        )
                results = await self._tools.run_node(run, message)
                if streaming:
                    for result in results:
                        yield StreamToolResult(
                            result.tool_call_id,
                            result.name or "",
                            flatten_content_blocks(result.content) or "",
                            result.status == "error",
                        )
                continue
            if action == "continue_answer":
                recoveries += 1
                answer_prefix += message_text(message) or ""
                messages.append(HumanMessage(content=CONTINUE_PROMPT))
                continue
            if action == "resume":
                answer_prefix += message_text(message) or ""
                continue
            break
        yield StreamFinal(await self._finish(run, message, route, answer_prefix))

    async def _finish(
        self, run: RunState, message: AIMessage, route: Route, answer_prefix: str
    ) -> AgentResponse:
        config = self.config
        has_calls = bool(message.tool_calls or message.invalid_tool_calls)
        text = message_text(message) or ""
        final = answer_prefix + text
        salvaged = has_calls and bool(text.strip())
        if has_calls:
            # The loop finished on a turn whose calls will not run: answer them so the history
            # stays valid for the next turn.
            repair_history(run.messages, NOT_RUN)
        termination_reason: TerminationReason | None = None
        synthesized = False
        shown_elsewhere = False  # the answer did not come from the loop's own messages
        if not final.strip():
            final = ""
            termination_reason = (
                "tool_calls_with_no_text" if has_calls else "no_content_no_tool_calls"
            )
            await report_silent_bail(self._dispatch, run, message, termination_reason)
            if config.synthesize_on_empty_final and not run.streaming:
                recovered = await self._synthesize(run)
                if recovered.strip():
                    final = recovered
                    synthesized = shown_elsewhere = True
        findings: tuple[FabricationFinding, ...] = ()
        if config.fabrication_check != "off" and final.strip():
            checked, findings = await self._fabrication.check(run, final)
            if checked != final:
                final = checked
                shown_elsewhere = True
        if shown_elsewhere:
            # The next turn's model must know what the user was shown.
            run.messages.append(AIMessage(content=final))
        stop_reason = reported_stop_reason(route.stop_reason, has_calls)
        exit_reason = run_exit(route.reason, stop_reason)
        run.answer = final
        note = stop_note(exit_reason, model_calls=run.loop_calls)
        if note is not None and config.stop_reason_notes:
            final = f"{final}\n\n{note}" if final.strip() else note
            run.messages.append(AIMessage(content=note))
        response = AgentResponse(
            final_response=final,
            stop_reason=stop_reason,
            termination_reason=termination_reason,
            salvaged=salvaged,
            synthesized=synthesized,
            iterations=run.loop_calls,
            messages=list(run.messages),
            run_id=run.run_id,
            ended_by=route.reason,
            fabrication_findings=findings,
            run_stop_reason=exit_reason,
            stop_note=note if config.stop_reason_notes else None,
        )
        run.response = response
        return response

    async def _synthesize(self, run: RunState) -> str:
        """One completion without tools asking for the answer the loop never gave; "" if it fails.

        A failing recovery call leaves the run what it was, a completed silent bail: its
        LLMEnd says ``error`` with the exception type, and the run goes on to its end.
        """
        prompt = (
            f"{SYNTHESIS_INSTRUCTION}\n\n<conversation>\n{transcript(run.messages)}\n"
            "</conversation>"
        )
        failure = (SYNTHESIS_FAILED, "synthesize_on_empty_final")
        text = await self._calls.ask(run, self.model, prompt, NODE_SYNTHESIZE_FALLBACK, failure)
        return text or ""
