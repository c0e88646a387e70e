"""``ReactAgent``: the reference ReAct loop and its termination contract.

One string comes out of every run, ``final_response``, however the loop ended:

* the model answered (no tool calls): its text;
* the loop was forced to finish on a turn that requested tools (loop cut, call cap, or the
  provider ending the turn while sending text and tool calls): the text of that turn, salvaged;
* no text at all: a *silent bail* -- ``""``, an INFO log line and ``ReactLoopEndEvent``, and,
  with ``synthesize_on_empty_final`` on the non-streaming path, one recovery completion without
  tools that summarises the work done.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_chunk_to_message,
)
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as as_tool

from symfonic_otel.agent.config import FrameworkConfig
from symfonic_otel.agent.dispatch import CallbackDispatcher
from symfonic_otel.agent.fabrication import (
    SAFE_ENVELOPE,
    FabricationFinding,
    heuristic_fabrication_detector,
    preview,
)
from symfonic_otel.agent.flatten import content_type as content_type_of
from symfonic_otel.agent.flatten import flatten_content_blocks, message_text
from symfonic_otel.agent.history import INTERRUPTED, NOT_RUN, repair_history
from symfonic_otel.agent.response import AgentResponse
from symfonic_otel.agent.streaming import (
    StreamEvent,
    StreamFinal,
    StreamTextDelta,
    StreamToolCall,
    StreamToolResult,
)
from symfonic_otel.agent.termination import Route, reported_stop_reason, tools_condition
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    FabricationAction,
    FabricationDetectedEvent,
    LLMEndEvent,
    ReactLoopEndEvent,
    TerminationOutcome,
    TerminationReason,
)
from symfonic_otel.logs import get_logger
from symfonic_otel.semconv import NODE_FABRICATION_REVISE, NODE_REACT, NODE_SYNTHESIZE_FALLBACK

__all__ = ["SILENT_BAIL_LOG_EVENT", "ReactAgent"]

_logger = get_logger("symfonic_otel.agent")

SILENT_BAIL_LOG_EVENT: Final = "react: empty final_response on terminator"
CONTINUE_PROMPT: Final = (
    "Your previous reply was cut off by the output limit. Continue it exactly where it stopped, "
    "without repeating anything already written."
)
SYNTHESIS_INSTRUCTION: Final = (
    "The conversation below ended without a final answer to the user. Using only what it "
    "contains, write that answer now: summarise the work that was done and what it found, and "
    "say plainly what remains unknown. Tools are not available; reply with the answer only."
)
REVISION_INSTRUCTION: Final = (
    "Below are a conversation and a draft answer to its last user request. A check found claims "
    "in the draft that nothing in the conversation supports (listed below). Rewrite the answer "
    "so that it states only what the conversation supports: remove or clearly qualify the "
    "unsupported claims. Reply with the answer only."
)
_TRANSCRIPT_ITEM_CHARS: Final = 2000


@dataclass(slots=True)
class _Run:
    """Mutable state of one run."""

    run_id: str
    messages: list[BaseMessage]
    streaming: bool
    model_calls: int = 0  # every completion of the run: the source of iteration_index
    loop_calls: int = 0  # completions of the loop node itself
    nodes: int = 0  # model calls plus tool rounds, reported as AgentEnd.node_count
    response: AgentResponse | None = None


def _model_attr_name(model: object) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def _usage(message: AIMessage | None) -> dict[str, Any]:
    usage = message.usage_metadata if message is not None else None
    if not usage:
        return {}
    return {
        "input_tokens": usage.get("input_tokens", 0),
        "output_tokens": usage.get("output_tokens", 0),
        "total_tokens": usage.get("total_tokens", 0),
    }


def _clip(text: str) -> str:
    if len(text) <= _TRANSCRIPT_ITEM_CHARS:
        return text
    return text[:_TRANSCRIPT_ITEM_CHARS] + " [...]"


def _dumps(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _transcript(messages: Sequence[BaseMessage]) -> str:
    """The conversation as plain text.

    Recovery and revision completions run without tools; some providers reject tool-call and
    tool-result blocks in a request that defines no tools, so the work is restated as text.
    """
    names: dict[str, str] = {}
    lines: list[str] = []
    for message in messages:
        if isinstance(message, AIMessage):
            text = message_text(message)
            if text and text.strip():
                lines.append(f"Assistant: {_clip(text)}")
            for call in message.tool_calls:
                call_id = call.get("id")
                if call_id:
                    names[call_id] = call["name"]
                args = _clip(_dumps(call["args"]))
                lines.append(f"Assistant called tool {call['name']} with {args}")
        elif isinstance(message, ToolMessage):
            name = message.name or names.get(message.tool_call_id, "tool")
            body = flatten_content_blocks(message.content) or _dumps(message.content)
            lines.append(f"Result of {name}: {_clip(body)}")
        elif isinstance(message, SystemMessage):
            lines.append(f"System: {_clip(flatten_content_blocks(message.content) or '')}")
        else:
            lines.append(f"User: {_clip(flatten_content_blocks(message.content) or '')}")
    return "\n".join(lines)


def _to_tool(candidate: object) -> BaseTool:
    if isinstance(candidate, BaseTool):
        return candidate
    if callable(candidate):
        converted = as_tool(candidate)
        if isinstance(converted, BaseTool):
            return converted
    raise TypeError(f"tools must be langchain-core tools or functions, got {candidate!r}")


class ReactAgent:
    """A ReAct loop over a langchain-core chat model and tools, emitting Symfonic events.

    ``run`` is the non-streaming path (salvage and synthesis), ``stream`` the streaming one
    (salvage only). Both accept ``history``: a caller-owned message list the run appends to in
    place, left valid (every tool call answered) even when the run is interrupted.
    """

    def __init__(
        self,
        model: BaseChatModel,
        tools: Iterable[BaseTool | Callable[..., Any]] = (),
        *,
        config: FrameworkConfig | None = None,
        callbacks: Iterable[object] = (),
        name: str = "symfonic",
    ) -> None:
        if config is None:
            config = FrameworkConfig()
        elif not isinstance(config, FrameworkConfig):
            raise TypeError(f"config must be a FrameworkConfig, got {type(config).__name__}")
        self.model = model
        self.tools: tuple[BaseTool, ...] = tuple(_to_tool(t) for t in tools)
        self._tools_by_name: dict[str, BaseTool] = {}
        for item in self.tools:
            if item.name in self._tools_by_name:
                raise ValueError(f"two tools are named {item.name!r}; tool names must be unique")
            self._tools_by_name[item.name] = item
        self._bound: Runnable[Any, Any] = (
            model.bind_tools(list(self.tools)) if self.tools else model
        )
        self.config = config
        self.name = name
        self._dispatch = CallbackDispatcher(callbacks)
        self._default_model_name = _model_attr_name(model)
        self._detector = config.fabrication_detector or heuristic_fabrication_detector

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
        run = _Run(run_id or uuid.uuid4().hex, history if history is not None else [], streaming)
        dispatch = self._dispatch
        started = time.perf_counter()
        outcome: TerminationOutcome = "completed"
        try:
            if dispatch.agent_start:
                await dispatch.emit(
                    dispatch.agent_start,
                    "on_agent_start",
                    AgentStartEvent(query=query, run_id=run.run_id),
                )
            run.messages.append(HumanMessage(content=query))
            async with aclosing(self._loop(run)) as steps:
                async for event in steps:
                    yield event
        except Exception:
            outcome = "error"
            raise
        except BaseException:
            # KeyboardInterrupt, CancelledError, or a stream consumer that stopped reading
            # (GeneratorExit). After the final event has been handed out the run is complete.
            outcome = "completed" if run.response is not None else "cancelled"
            raise
        finally:
            if outcome != "completed":
                repair_history(run.messages, INTERRUPTED)
            if dispatch.agent_end:
                await dispatch.emit(
                    dispatch.agent_end,
                    "on_agent_end",
                    AgentEndEvent(
                        run_id=run.run_id,
                        final_response=(
                            run.response.final_response if run.response is not None else None
                        ),
                        duration_ms=(time.perf_counter() - started) * 1000.0,
                        node_count=run.nodes,
                        outcome=outcome,
                    ),
                )

    # --- the loop ----------------------------------------------------------------------------

    async def _loop(self, run: _Run) -> AsyncGenerator[StreamEvent, None]:
        config = self.config
        messages = run.messages
        streaming = run.streaming
        answer_prefix = ""  # text of turns cut at the token limit (or paused), continued since
        recoveries = 0
        while True:
            repair_history(messages)
            if streaming:
                message: AIMessage | None = None
                async with aclosing(
                    self._stream_model(run, self._bound, messages, NODE_REACT)
                ) as parts:
                    async for part in parts:
                        if isinstance(part, StreamTextDelta):
                            yield part
                        else:
                            message = part
                if message is None:  # pragma: no cover - _stream_model always ends with one
                    raise RuntimeError("the model stream ended without a message")
            else:
                message = await self._call_model(run, self._bound, messages, NODE_REACT)
            run.loop_calls += 1
            messages.append(message)
            route = tools_condition(
                messages, config, model_calls=run.loop_calls, length_recoveries_used=recoveries
            )
            action = route.action
            if action == "tools":
                answer_prefix = ""
                if streaming:
                    for call in message.tool_calls:
                        yield StreamToolCall(
                            call.get("id") or "", call["name"], call["args"], run.model_calls - 1
                        )
                results = await self._execute(messages, message)
                run.nodes += 1
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
        self, run: _Run, message: AIMessage, route: Route, answer_prefix: str
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
        if not final.strip():
            final = ""
            termination_reason = (
                "tool_calls_with_no_text" if has_calls else "no_content_no_tool_calls"
            )
            await self._silent_bail(run, message, termination_reason)
            if config.synthesize_on_empty_final and not run.streaming:
                recovered = await self._synthesize(run)
                if recovered.strip():
                    final = recovered
                    synthesized = True
        findings: tuple[FabricationFinding, ...] = ()
        if config.fabrication_check != "off" and final.strip():
            final, findings = await self._check_fabrication(run, final)
        response = AgentResponse(
            final_response=final,
            stop_reason=reported_stop_reason(route.stop_reason, has_calls),
            termination_reason=termination_reason,
            salvaged=salvaged,
            synthesized=synthesized,
            iterations=run.loop_calls,
            messages=list(run.messages),
            run_id=run.run_id,
            ended_by=route.reason,
            fabrication_findings=findings,
        )
        run.response = response
        return response

    async def _silent_bail(
        self, run: _Run, message: AIMessage, termination_reason: TerminationReason
    ) -> None:
        tool_call_count = len(message.tool_calls) + len(message.invalid_tool_calls)
        iteration_index = run.model_calls - 1
        content_type = content_type_of(message.content)
        _logger.info(
            SILENT_BAIL_LOG_EVENT,
            iteration_index=iteration_index,
            content_type=content_type,
            has_tool_calls=tool_call_count > 0,
            tool_call_count=tool_call_count,
            termination_reason=termination_reason,
            run_id=run.run_id,
        )
        dispatch = self._dispatch
        if dispatch.react_loop_end:
            await dispatch.emit(
                dispatch.react_loop_end,
                "on_react_loop_end",
                ReactLoopEndEvent(
                    run_id=run.run_id,
                    iteration_index=iteration_index,
                    content_type=content_type,
                    has_tool_calls=tool_call_count > 0,
                    tool_call_count=tool_call_count,
                    termination_reason=termination_reason,
                ),
            )

    async def _synthesize(self, run: _Run) -> str:
        """One completion on the model without tools, asking for the answer the loop never gave."""
        transcript = _transcript(run.messages)
        prompt = f"{SYNTHESIS_INSTRUCTION}\n\n<conversation>\n{transcript}\n</conversation>"
        message = await self._call_model(
            run, self.model, [HumanMessage(content=prompt)], NODE_SYNTHESIZE_FALLBACK
        )
        return message_text(message) or ""

    # --- fabrication check -------------------------------------------------------------------

    async def _check_fabrication(
        self, run: _Run, draft: str
    ) -> tuple[str, tuple[FabricationFinding, ...]]:
        config = self.config
        try:
            found = self._detector(draft, list(run.messages))
            if inspect.isawaitable(found):
                found = await found
            findings = tuple(found)
        except Exception as exc:  # a broken detector must not break the answer
            _logger.warning(
                "fabrication detector raised; the draft is kept unchecked",
                run_id=run.run_id,
                error_type=type(exc).__qualname__,
                exc_info=exc,
            )
            return draft, ()
        if not findings:
            return draft, ()
        mode = config.fabrication_check
        threshold = config.fabrication_refuse_min_confidence
        strongest = max(float(f.confidence) for f in findings)
        action: FabricationAction = "observed"
        if mode == "revise" and not run.streaming:
            action = "revise_forced"
        elif mode == "refuse" and strongest >= threshold:
            action = "refuse_replaced"
        draft_preview, truncated = preview(draft)
        dispatch = self._dispatch
        if dispatch.fabrication_detected:
            await dispatch.emit(
                dispatch.fabrication_detected,
                "on_fabrication_detected",
                FabricationDetectedEvent(
                    run_id=run.run_id,
                    mode=mode,
                    action_taken=action,
                    findings=[f.to_event_payload() for f in findings],
                    refuse_threshold=threshold,
                    max_finding_confidence=strongest,
                    original_draft_preview=draft_preview,
                    replacement_preview=(
                        preview(SAFE_ENVELOPE)[0] if action == "refuse_replaced" else None
                    ),
                    preview_truncated=truncated,
                ),
            )
        if action == "refuse_replaced":
            return SAFE_ENVELOPE, findings
        if action == "revise_forced":
            listed = "\n".join(f"- {f.kind}: {f.claim}" for f in findings)
            prompt = (
                f"{REVISION_INSTRUCTION}\n\nUnsupported claims:\n{listed}\n\n<conversation>\n"
                f"{_transcript(run.messages)}\n</conversation>\n\n<draft>\n{draft}\n</draft>"
            )
            revised = await self._call_model(
                run, self.model, [HumanMessage(content=prompt)], NODE_FABRICATION_REVISE
            )
            text = message_text(revised) or ""
            return (text if text.strip() else draft), findings
        return draft, findings

    # --- model calls -------------------------------------------------------------------------

    async def _call_model(
        self, run: _Run, runnable: Runnable[Any, Any], messages: list[BaseMessage], node: str
    ) -> AIMessage:
        index = run.model_calls
        run.model_calls += 1
        run.nodes += 1
        started_at = datetime.now(UTC).isoformat() if self._dispatch.llm_end else ""
        started = time.perf_counter()
        try:
            result = await runnable.ainvoke(messages)
            if not isinstance(result, AIMessage):
                raise TypeError(f"the chat model returned {type(result).__name__}, not AIMessage")
        except Exception:
            await self._llm_end(run, None, node, index, started_at, started, "error")
            raise
        except BaseException:
            await self._llm_end(run, None, node, index, started_at, started, "cancelled")
            raise
        await self._llm_end(run, result, node, index, started_at, started, "completed")
        return result

    async def _stream_model(
        self, run: _Run, runnable: Runnable[Any, Any], messages: list[BaseMessage], node: str
    ) -> AsyncGenerator[StreamTextDelta | AIMessage, None]:
        index = run.model_calls
        run.model_calls += 1
        run.nodes += 1
        started_at = datetime.now(UTC).isoformat() if self._dispatch.llm_end else ""
        started = time.perf_counter()
        merged: AIMessageChunk | None = None
        try:
            async for chunk in runnable.astream(messages):
                if not isinstance(chunk, AIMessageChunk):
                    raise TypeError(
                        f"the chat model streamed {type(chunk).__name__}, not AIMessageChunk"
                    )
                merged = chunk if merged is None else merged + chunk
                delta = flatten_content_blocks(chunk.content)
                if delta:
                    yield StreamTextDelta(delta, index)
        except Exception:
            await self._llm_end(run, None, node, index, started_at, started, "error")
            raise
        except BaseException:
            await self._llm_end(run, None, node, index, started_at, started, "cancelled")
            raise
        message = AIMessage(content="") if merged is None else message_chunk_to_message(merged)
        if not isinstance(message, AIMessage):  # pragma: no cover - AIMessageChunk converts so
            raise TypeError(f"cannot convert {type(message).__name__} to AIMessage")
        await self._llm_end(run, message, node, index, started_at, started, "completed")
        yield message

    async def _llm_end(
        self,
        run: _Run,
        message: AIMessage | None,
        node: str,
        index: int,
        started_at: str,
        started: float,
        outcome: TerminationOutcome,
    ) -> None:
        dispatch = self._dispatch
        if not dispatch.llm_end:
            return
        duration_ms = (time.perf_counter() - started) * 1000.0
        model = self._default_model_name
        if message is not None:
            metadata = message.response_metadata
            named = metadata.get("model_name") or metadata.get("model")
            if isinstance(named, str) and named:
                model = named
        await dispatch.emit(
            dispatch.llm_end,
            "on_llm_end",
            LLMEndEvent(
                model=model,
                output=(message_text(message) or "") if message is not None else "",
                usage=_usage(message),
                run_id=run.run_id,
                node_name=node,
                duration_ms=duration_ms,
                started_at_utc=started_at,
                iteration_index=index,
                outcome=outcome,
            ),
        )

    # --- tools -------------------------------------------------------------------------------

    async def _execute(self, messages: list[BaseMessage], message: AIMessage) -> list[ToolMessage]:
        """Run the turn's tool calls (concurrently when several) and append their results."""
        calls = message.tool_calls
        results: list[ToolMessage]
        if len(calls) == 1 and not message.invalid_tool_calls:
            results = [await self._run_tool(calls[0])]
            messages.extend(results)
            return results
        tasks = [asyncio.ensure_future(self._run_tool(call)) for call in calls]
        try:
            results = list(await asyncio.gather(*tasks)) if tasks else []
        except BaseException:
            for task in tasks:
                if not task.done():
                    task.cancel()
            # Keep what finished; history repair answers the rest.
            for task in tasks:
                if task.done() and not task.cancelled() and task.exception() is None:
                    messages.append(task.result())
            raise
        for bad in message.invalid_tool_calls:
            if bad.get("id"):
                results.append(
                    ToolMessage(
                        content=(
                            "Error: the arguments of this tool call could not be parsed "
                            f"({bad.get('error') or 'invalid JSON'}): {bad.get('args')}"
                        ),
                        tool_call_id=bad["id"],
                        name=bad.get("name") or "",
                        status="error",
                    )
                )
        messages.extend(results)
        return results

    async def _run_tool(self, call: Any) -> ToolMessage:
        name = call["name"]
        call_id = call.get("id") or ""
        selected = self._tools_by_name.get(name)
        if selected is None:
            available = ", ".join(self._tools_by_name) or "none"
            return ToolMessage(
                content=f"Error: there is no tool named {name!r}. Available tools: {available}.",
                tool_call_id=call_id,
                name=name,
                status="error",
            )
        try:
            output = await selected.ainvoke({**call, "type": "tool_call"})
        except Exception as exc:  # the model reads the error and can try something else
            return ToolMessage(
                content=f"Error: {type(exc).__name__}: {exc}",
                tool_call_id=call_id,
                name=name,
                status="error",
            )
        if isinstance(output, ToolMessage):
            return output
        return ToolMessage(
            content=output if isinstance(output, str) else _dumps(output),
            tool_call_id=call_id,
            name=name,
        )
