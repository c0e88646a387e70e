"""Tool execution: every requested call gets exactly one result, in call order.

Calls run concurrently when a turn makes several. A tool that raises, an unknown tool name and
unparseable arguments become error results the model reads, so it can try something else. A
call the provider sent without an id gets one before it runs, so its result can be paired.

Each call, unparseable ones included, emits a ``ToolCallStartEvent`` (phase ``executing``) when
it is dispatched and a ``ToolResultEvent`` with the same ``tool_call_id`` when its result is
known; a call interrupted by cancellation gets an error result event before the cancellation
goes on, so every start is paired.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as as_tool

from symfonic_otel.agent.dispatch import CallbackDispatcher
from symfonic_otel.agent.flatten import flatten_content_blocks
from symfonic_otel.agent.history import INTERRUPTED
from symfonic_otel.agent.nodes import end_node, fail_node, start_node
from symfonic_otel.agent.prompts import dumps
from symfonic_otel.events import ToolCallStartEvent, ToolResultEvent
from symfonic_otel.semconv import NODE_TOOLS

if TYPE_CHECKING:
    from symfonic_otel.agent.calls import RunState

__all__ = ["ToolRunner", "ensure_call_ids", "to_tool"]


def to_tool(candidate: object) -> BaseTool:
    """A langchain-core tool as is; a plain function wrapped as one."""
    if isinstance(candidate, BaseTool):
        return candidate
    if callable(candidate):
        converted = as_tool(candidate)
        if isinstance(converted, BaseTool):
            return converted
    raise TypeError(f"tools must be langchain-core tools or functions, got {candidate!r}")


def ensure_call_ids(message: AIMessage) -> bool:
    """Give every tool call (valid or not) without an id a fresh one; True when any was added.

    The ids are written into the message itself: the history must carry the same id on the
    call and on its result, or the next request holds a call without an answer.
    """
    changed = False
    for group in (message.tool_calls, message.invalid_tool_calls):
        for call in group:
            if not call.get("id"):
                call["id"] = f"call_{uuid.uuid4().hex[:24]}"
                changed = True
    return changed


class ToolRunner:
    """The agent's tools by name, and the execution of one turn's calls."""

    def __init__(
        self,
        tools: Iterable[BaseTool | Callable[..., Any]],
        dispatch: CallbackDispatcher | None = None,
    ) -> None:
        self._dispatch = dispatch if dispatch is not None else CallbackDispatcher(())
        self.tools: tuple[BaseTool, ...] = tuple(to_tool(t) for t in tools)
        self.by_name: dict[str, BaseTool] = {}
        for item in self.tools:
            if item.name in self.by_name:
                raise ValueError(f"two tools are named {item.name!r}; tool names must be unique")
            self.by_name[item.name] = item

    async def run_node(self, run: RunState, message: AIMessage) -> list[ToolMessage]:
        """The tools node: the turn's calls, between NodeStart and NodeEnd (or NodeError)."""
        dispatch = self._dispatch
        started = await start_node(dispatch, run.run_id, NODE_TOOLS)
        try:
            results = await self.execute(run.messages, message, run.run_id)
        except BaseException as exc:
            await fail_node(dispatch, run.run_id, NODE_TOOLS, exc)
            raise
        run.nodes += 1
        await end_node(dispatch, run.run_id, NODE_TOOLS, started)
        return results

    async def execute(
        self, messages: list[BaseMessage], message: AIMessage, run_id: str = ""
    ) -> list[ToolMessage]:
        """Run the turn's tool calls (concurrently when several) and append their results."""
        calls = message.tool_calls
        results: list[ToolMessage]
        if len(calls) == 1 and not message.invalid_tool_calls:
            results = [await self._run(calls[0], run_id)]
            messages.extend(results)
            return results
        tasks = [asyncio.ensure_future(self._run(call, run_id)) for call in calls]
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
                call_id, name = bad["id"] or "", bad.get("name") or ""
                await self._started(run_id, call_id, name, None)
                result = ToolMessage(
                    content=(
                        "Error: the arguments of this tool call could not be parsed "
                        f"({bad.get('error') or 'invalid JSON'}): {bad.get('args')}"
                    ),
                    tool_call_id=call_id,
                    name=name,
                    status="error",
                )
                await self._finished(run_id, call_id, name, result)
                results.append(result)
        messages.extend(results)
        return results

    async def _run(self, call: Any, run_id: str) -> ToolMessage:
        name = call["name"]
        call_id = call.get("id") or ""
        await self._started(run_id, call_id, name, call["args"])
        try:
            result, error_type = await self._invoke(name, call_id, call)
        except BaseException as exc:  # cancelled: close the call's start before it goes on
            interrupted = ToolMessage(
                content=INTERRUPTED, tool_call_id=call_id, name=name, status="error"
            )
            await self._finished(run_id, call_id, name, interrupted, type(exc).__name__)
            raise
        await self._finished(run_id, call_id, name, result, error_type)
        return result

    async def _started(self, run_id: str, call_id: str, name: str, args: Any) -> None:
        await self._dispatch.send(
            "on_tool_call_start",
            lambda: ToolCallStartEvent(
                tool_call_id=call_id,
                tool_name=name,
                arguments=dict(args) if isinstance(args, dict) else args,
                phase="executing",
                run_id=run_id,
            ),
        )

    async def _finished(
        self,
        run_id: str,
        call_id: str,
        name: str,
        result: ToolMessage,
        error_type: str | None = None,
    ) -> None:
        await self._dispatch.send(
            "on_tool_result",
            lambda: ToolResultEvent(
                tool_call_id=call_id,
                tool_name=name,
                result=flatten_content_blocks(result.content) or "",
                is_error=result.status == "error",
                run_id=run_id,
                error_type=error_type,
            ),
        )

    async def _invoke(self, name: str, call_id: str, call: Any) -> tuple[ToolMessage, str | None]:
        """The call's result, and the type of the exception the tool raised, if it raised."""
        selected = self.by_name.get(name)
        if selected is None:
            available = ", ".join(self.by_name) or "none"
            unknown = ToolMessage(
                content=f"Error: there is no tool named {name!r}. Available tools: {available}.",
                tool_call_id=call_id,
                name=name,
                status="error",
            )
            return unknown, None
        try:
            output = await selected.ainvoke({**call, "type": "tool_call"})
        except Exception as exc:  # the model reads the error and can try something else
            failed = ToolMessage(
                content=f"Error: {type(exc).__name__}: {exc}",
                tool_call_id=call_id,
                name=name,
                status="error",
            )
            return failed, type(exc).__name__
        if isinstance(output, ToolMessage):
            return output, None
        message = ToolMessage(
            content=output if isinstance(output, str) else dumps(output),
            tool_call_id=call_id,
            name=name,
        )
        return message, None
