"""Tool execution: every requested call gets exactly one result, in call order.

Calls run concurrently when a turn makes several. A tool that raises, an unknown tool name and
unparseable arguments become error results the model reads, so it can try something else. A
call the provider sent without an id gets one before it runs, so its result can be paired.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as as_tool

from symfonic_otel.agent.prompts import dumps

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

    def __init__(self, tools: Iterable[BaseTool | Callable[..., Any]]) -> None:
        self.tools: tuple[BaseTool, ...] = tuple(to_tool(t) for t in tools)
        self.by_name: dict[str, BaseTool] = {}
        for item in self.tools:
            if item.name in self.by_name:
                raise ValueError(f"two tools are named {item.name!r}; tool names must be unique")
            self.by_name[item.name] = item

    async def execute(self, messages: list[BaseMessage], message: AIMessage) -> list[ToolMessage]:
        """Run the turn's tool calls (concurrently when several) and append their results."""
        calls = message.tool_calls
        results: list[ToolMessage]
        if len(calls) == 1 and not message.invalid_tool_calls:
            results = [await self._run(calls[0])]
            messages.extend(results)
            return results
        tasks = [asyncio.ensure_future(self._run(call)) for call in calls]
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

    async def _run(self, call: Any) -> ToolMessage:
        name = call["name"]
        call_id = call.get("id") or ""
        selected = self.by_name.get(name)
        if selected is None:
            available = ", ".join(self.by_name) or "none"
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
            content=output if isinstance(output, str) else dumps(output),
            tool_call_id=call_id,
            name=name,
        )
