"""Model calls of a run and their events: each call is a node (NodeStart, LLMStart, LLMPreCall,
LLMEnd, NodeEnd or NodeError), with one ``LLMEndEvent`` per completion however it ended.

LLMEnd carries what telemetry needs and the message alone does not say: the call site
(``node_name``), the 0-based index of the call in the run, the provider's raw stop value, the
exception type of a failed call, the forced tool choice, and usage with its cache details.
Streamed calls also emit a ``TextDeltaEvent`` per text chunk and, when a chunk first reveals a
tool call (its id and name), a ``ToolCallStartEvent`` of phase ``announced``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    message_chunk_to_message,
)
from langchain_core.runnables import Runnable

from symfonic_otel.agent.dispatch import CallbackDispatcher
from symfonic_otel.agent.flatten import flatten_content_blocks, message_text
from symfonic_otel.agent.nodes import end_node, fail_node, start_node
from symfonic_otel.agent.precall import RequestShapes
from symfonic_otel.agent.streaming import StreamTextDelta
from symfonic_otel.agent.termination import raw_stop_reason
from symfonic_otel.events import (
    LLMEndEvent,
    LLMPreCallEvent,
    LLMStartEvent,
    TerminationOutcome,
    TextDeltaEvent,
    ToolCallStartEvent,
)
from symfonic_otel.logs import FailureLog

if TYPE_CHECKING:
    from symfonic_otel.agent.response import AgentResponse

__all__ = ["ModelCalls", "RunState", "usage_of"]


@dataclass(slots=True)
class RunState:
    """Mutable state of one run."""

    run_id: str
    query: str
    messages: list[BaseMessage]
    streaming: bool
    query_message: BaseMessage | None = None  # where the current run begins in ``messages``
    model_calls: int = 0  # every completion of the run: the source of iteration_index
    loop_calls: int = 0  # completions of the loop node itself
    nodes: int = 0  # model calls plus tool rounds, reported as AgentEnd.node_count
    forced_tool_choice: str | None = None  # what the last iteration forced
    answer: str | None = None  # the answer without any stop note, for AgentEnd
    response: AgentResponse | None = None
    _start_hint: int = 0

    def run_start(self) -> int:
        """Index of this run's query message: what comes before it is history it was given."""
        messages, query = self.messages, self.query_message
        if query is None:
            return 0
        hint = self._start_hint
        if hint < len(messages) and messages[hint] is query:
            return hint
        for index, message in enumerate(messages):
            if message is query:
                self._start_hint = index
                return index
        return 0


def usage_of(message: AIMessage | None) -> dict[str, Any]:
    """LangChain ``usage_metadata`` as the LLMEnd usage dict, cache and reasoning details kept."""
    usage = message.usage_metadata if message is not None else None
    if not usage:
        return {}
    out: dict[str, Any] = {
        "input_tokens": usage.get("input_tokens", 0),
        "output_tokens": usage.get("output_tokens", 0),
        "total_tokens": usage.get("total_tokens", 0),
    }
    for key in ("input_token_details", "output_token_details"):
        details = usage.get(key)
        if isinstance(details, Mapping) and details:
            out[key] = dict(details)
    return out


def _error_type(exc: BaseException) -> str:
    return type(exc).__name__


def _system_prompt(messages: list[BaseMessage]) -> str:
    if messages and isinstance(messages[0], SystemMessage):
        return message_text(messages[0]) or ""
    return ""


@dataclass(frozen=True, slots=True)
class _Started:
    """A call begun: what its end events say of it."""

    node: str
    index: int  # the call's 0-based index in the run
    node_started: float  # perf_counter at the node's start
    started_at: str  # UTC ISO time, "" when no handler wants LLMEnd
    perf: float  # perf_counter at the request
    forced_tool_choice: str | None


class ModelCalls:
    """Invokes or streams a runnable for a run and emits the call's ``LLMEndEvent``."""

    def __init__(
        self, dispatch: CallbackDispatcher, default_model_name: str, failures: FailureLog
    ) -> None:
        self._dispatch = dispatch
        self._failures = failures
        self._default_model_name = default_model_name
        self._requests = RequestShapes()

    async def call(
        self,
        run: RunState,
        runnable: Runnable[Any, Any],
        messages: list[BaseMessage],
        node: str,
        *,
        forced_tool_choice: str | None = None,
    ) -> AIMessage:
        started = await self._begin(run, runnable, messages, node, forced_tool_choice)
        try:
            result = await runnable.ainvoke(messages)
            if not isinstance(result, AIMessage):
                raise TypeError(f"the chat model returned {type(result).__name__}, not AIMessage")
        except BaseException as exc:
            await self._fail(run, started, exc)
            raise
        await self._finish(run, started, result)
        return result

    async def ask(
        self,
        run: RunState,
        runnable: Runnable[Any, Any],
        prompt: str,
        node: str,
        failure: tuple[str, str],
    ) -> str | None:
        """The text of one completion of ``prompt`` alone (a recovery call: synthesis,
        revision); None if the call raised, reported as ``failure`` (its kind and where) with
        the exception's type and place, never its message."""
        try:
            message = await self.call(run, runnable, [HumanMessage(content=prompt)], node)
        except Exception as exc:
            kind, where = failure
            self._failures.report(kind, exc, where=where, run_id=run.run_id)
            return None
        return message_text(message) or ""

    async def stream(
        self,
        run: RunState,
        runnable: Runnable[Any, Any],
        messages: list[BaseMessage],
        node: str,
        *,
        forced_tool_choice: str | None = None,
    ) -> AsyncGenerator[StreamTextDelta | AIMessage, None]:
        """Text deltas as they arrive, then the merged message."""
        started = await self._begin(run, runnable, messages, node, forced_tool_choice)
        dispatch, run_id = self._dispatch, run.run_id
        merged: AIMessageChunk | None = None
        announced: set[str] | None = set() if dispatch.tool_call_start else None
        try:
            async for chunk in runnable.astream(messages):
                if not isinstance(chunk, AIMessageChunk):
                    raise TypeError(
                        f"the chat model streamed {type(chunk).__name__}, not AIMessageChunk"
                    )
                merged = chunk if merged is None else merged + chunk
                if announced is not None and chunk.tool_call_chunks:
                    await self._announce(run_id, chunk, announced)
                delta = flatten_content_blocks(chunk.content)
                if delta:
                    if dispatch.text_delta:
                        await dispatch.emit(
                            dispatch.text_delta,
                            "on_text_delta",
                            TextDeltaEvent(text=delta, run_id=run_id, node_name=node),
                        )
                    yield StreamTextDelta(delta, started.index)
        except BaseException as exc:
            await self._fail(run, started, exc)
            raise
        message = AIMessage(content="") if merged is None else message_chunk_to_message(merged)
        if not isinstance(message, AIMessage):  # pragma: no cover - AIMessageChunk converts so
            raise TypeError(f"cannot convert {type(message).__name__} to AIMessage")
        await self._finish(run, started, message)
        yield message

    async def _announce(self, run_id: str, chunk: AIMessageChunk, announced: set[str]) -> None:
        """A ``ToolCallStartEvent`` (``announced``) for each call this chunk first names."""
        dispatch = self._dispatch
        for part in chunk.tool_call_chunks:
            call_id, name = part.get("id"), part.get("name")
            if not call_id or not name or call_id in announced:
                continue
            announced.add(call_id)
            event = ToolCallStartEvent(
                tool_call_id=call_id, tool_name=name, phase="announced", run_id=run_id
            )
            await dispatch.emit(dispatch.tool_call_start, "on_tool_call_start", event)

    async def _llm_start(self, run: RunState, messages: list[BaseMessage], node: str) -> None:
        await self._dispatch.send(
            "on_llm_start",
            lambda: LLMStartEvent(
                model=self._default_model_name,
                messages=list(messages),  # a snapshot: the run goes on appending
                run_id=run.run_id,
                system_prompt=_system_prompt(messages),
                node_name=node,
            ),
        )

    async def _pre_call(
        self, run: RunState, runnable: Runnable[Any, Any], messages: list[BaseMessage], node: str
    ) -> None:
        def event() -> LLMPreCallEvent:
            tools, params = self._requests(runnable)
            return LLMPreCallEvent(
                model=self._default_model_name,
                messages=list(messages),  # what the runnable is invoked with
                tools=[dict(tool) for tool in tools],
                run_id=run.run_id,
                invocation_params=dict(params),
                node_name=node,
            )

        await self._dispatch.send("on_llm_pre_call", event)

    async def _begin(
        self,
        run: RunState,
        runnable: Runnable[Any, Any],
        messages: list[BaseMessage],
        node: str,
        forced_tool_choice: str | None,
    ) -> _Started:
        """Count the call and emit its starts (node, LLMStart, LLMPreCall), timing it."""
        index = run.model_calls
        run.model_calls += 1
        run.nodes += 1
        node_started = await start_node(self._dispatch, run.run_id, node)
        await self._llm_start(run, messages, node)
        await self._pre_call(run, runnable, messages, node)
        started_at = datetime.now(UTC).isoformat() if self._dispatch.llm_end else ""
        return _Started(
            node, index, node_started, started_at, time.perf_counter(), forced_tool_choice
        )

    async def _finish(self, run: RunState, started: _Started, message: AIMessage) -> None:
        await self._end(run, message, started, "completed")
        await end_node(self._dispatch, run.run_id, started.node, started.node_started)

    async def _fail(self, run: RunState, started: _Started, exc: BaseException) -> None:
        """The call raised (``error``, its type in LLMEnd) or was cancelled (``cancelled``)."""
        if isinstance(exc, Exception):
            await self._end(run, None, started, "error", exc)
        else:
            await self._end(run, None, started, "cancelled")
        await fail_node(self._dispatch, run.run_id, started.node, exc)

    async def _end(
        self,
        run: RunState,
        message: AIMessage | None,
        started: _Started,
        outcome: TerminationOutcome,
        exc: BaseException | None = None,
    ) -> None:
        dispatch = self._dispatch
        if not dispatch.llm_end:
            return
        duration_ms = (time.perf_counter() - started.perf) * 1000.0
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
                usage=usage_of(message),
                run_id=run.run_id,
                node_name=started.node,
                duration_ms=duration_ms,
                started_at_utc=started.started_at,
                iteration_index=started.index,
                outcome=outcome,
                stop_reason=raw_stop_reason(message) if message is not None else None,
                error_type=_error_type(exc) if exc is not None else None,
                forced_tool_choice=started.forced_tool_choice,
            ),
        )
