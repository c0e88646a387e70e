"""A Claude Agent SDK run stopped by ``max_turns``: what the recorder makes of its messages.

The messages are the SDK's own types, as the CLI's stream delivers them for a run that kept
calling a tool until its turn limit (no CLI, no network here). The CLI ends such a run with a
``ResultMessage`` of subtype ``error_max_turns`` and exits non-zero; the SDK raises
``ResultError``, which the recorder lets through.
"""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ResultError,
    ResultMessage,
    ToolUseBlock,
    UserMessage,
)

from symfonic_otel import tenant_scope
from symfonic_otel.claude_agent_sdk import SymfonicRecorder
from symfonic_otel.testing.telemetry import InMemoryTelemetry

CAPPED = {"subtype": "error_max_turns", "is_error": True, "terminal_reason": "max_turns"}


async def capped_run() -> AsyncIterator[Any]:
    for turn in range(2):
        call = ToolUseBlock(id=f"toolu_{turn}", name="lookup", input={"q": "weather"})
        yield AssistantMessage(content=[call], model="claude-sonnet-4-5", message_id=f"m{turn}")
        yield UserMessage(content="nothing found")
    yield ResultMessage(
        subtype="error_max_turns",
        duration_ms=10,
        duration_api_ms=8,
        is_error=True,
        num_turns=3,
        session_id="s1",
        stop_reason="tool_use",
        terminal_reason="max_turns",
    )
    raise ResultError("Claude Code returned an error result", data=CAPPED, exit_code=1)


async def main() -> None:
    session = recorder.session(name="helper")
    try:
        async for _message in session.record(capped_run()):
            pass
    except ResultError as exc:
        print("subtype from the SDK:", exc.subtype)  # subtype from the SDK: error_max_turns


telemetry = InMemoryTelemetry()
recorder = SymfonicRecorder(handler=telemetry.handler())
with tenant_scope("acme"):
    asyncio.run(main())

bails = telemetry.value("symfonic.react.silent_bails", {"tenant.id": "acme"})
run = telemetry.span("invoke_agent helper").attributes or {}
print("silent bails:", int(bails))  # silent bails: 1
print("stop reason:", run["symfonic.run.stop_reason"])  # stop reason: recursion_limit
print("error type:", run["error.type"])  # error type: ResultError
