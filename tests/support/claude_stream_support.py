"""A scripted Claude Agent SDK message stream for the recorder's tests (no CLI, no network).

The stream is the SDK's own ``AssistantMessage`` / ``ResultMessage`` objects; a ``Hook`` item in
it calls the session's tool hooks the way the SDK does between two responses, with the tool use
id it names, so tools that overlap or fail can be scripted.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import AssistantMessage, ResultMessage, ToolUseBlock
from claude_agent_sdk.types import Message

from symfonic_otel import tenant_scope
from symfonic_otel.claude_agent_sdk import RecordedSession, SymfonicRecorder
from symfonic_otel.testing.telemetry import InMemoryTelemetry

MODEL = "claude-test"
RUN = "invoke_agent claude"
CHAT = f"chat {MODEL}"


def said(message_id: str, *blocks: Any, parent: str | None = None, **fields: Any) -> Any:
    """One assistant message (the CLI sends each content block of a response as one)."""
    return AssistantMessage(
        content=list(blocks), model=MODEL, message_id=message_id, parent_tool_use_id=parent,
        **fields,
    )  # fmt: skip


def tool_use(call_id: str, q: str = "x") -> ToolUseBlock:
    return ToolUseBlock(id=call_id, name="lookup", input={"q": q})


def result(subtype: str = "success", *, is_error: bool = False, **fields: Any) -> ResultMessage:
    return ResultMessage(
        subtype=subtype, duration_ms=1, duration_api_ms=1, is_error=is_error, num_turns=1,
        session_id="s", **fields,
    )  # fmt: skip


@dataclass(frozen=True)
class Hook:
    """The SDK calling the session's ``event`` hooks for tool use ``call_id``."""

    event: str
    call_id: str
    fields: dict[str, Any] = field(default_factory=dict)


def ran(call_id: str, response: str = "sunny", q: str = "x") -> list[Hook]:
    """A tool that ran and returned ``response``."""
    return [
        Hook("PreToolUse", call_id, {"tool_input": {"q": q}}),
        Hook("PostToolUse", call_id, {"tool_input": {"q": q}, "tool_response": response}),
    ]


def failed(call_id: str, error: str = "KeyError: 'x'") -> list[Hook]:
    """A tool the SDK reports failed with ``error``."""
    return [Hook("PreToolUse", call_id), Hook("PostToolUseFailure", call_id, {"error": error})]


async def call_hooks(session: RecordedSession, hook: Hook) -> None:
    data = {
        "hook_event_name": hook.event,
        "tool_name": "lookup",
        "tool_use_id": hook.call_id,
        "tool_input": {"q": "x"},
        **hook.fields,
    }
    for matcher in (session.options.hooks or {})[hook.event]:  # type: ignore[index]
        for callback in matcher.hooks:
            await callback(data, hook.call_id, {"signal": None})  # type: ignore[arg-type, typeddict-item]


async def _stream(
    session: RecordedSession, items: Sequence[Any], raises: BaseException | None
) -> AsyncIterator[Message]:
    for item in items:
        if isinstance(item, Hook):
            await call_hooks(session, item)
        else:
            yield item
    if raises is not None:
        raise raises


def record(
    telemetry: InMemoryTelemetry,
    items: Sequence[Any],
    *,
    raises: BaseException | None = None,
    stop_after: int | None = None,
    prompt: str = "",
    **handler_options: Any,
) -> SymfonicRecorder:
    """Read ``items`` through one session for tenant ``acme``; ``stop_after`` messages only,
    then close the stream as a caller that stops reading does."""
    recorder = SymfonicRecorder(handler=telemetry.handler(**handler_options))
    session = recorder.session()

    async def read() -> None:
        recorded = session.record(_stream(session, items, raises), prompt=prompt)
        seen = 0
        async for _ in recorded:
            seen += 1
            if stop_after is not None and seen >= stop_after:
                await recorded.aclose()  # type: ignore[attr-defined]
                return

    with tenant_scope("acme"):
        asyncio.run(read())
    return recorder
