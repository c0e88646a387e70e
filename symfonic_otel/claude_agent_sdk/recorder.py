"""``SymfonicRecorder``: Claude Agent SDK runs from the message stream, tools from its hooks.

``recorder.query(prompt=..., options=...)`` wraps ``claude_agent_sdk.query``; for a
``ClaudeSDKClient``, ``session = recorder.session(options)`` gives the options to build the
client with (the SDK's ``PreToolUse`` / ``PostToolUse`` / ``PostToolUseFailure`` hooks added to
the caller's) and ``session.record(client.receive_response())`` reads one turn. Each recorded
stream is one ``invoke_agent`` run; each model response (the CLI sends its content blocks as
``AssistantMessage``\\ s sharing a message id) a ``chat`` span; each tool an ``execute_tool`` span.

The verdict is the ``ResultMessage``'s structure: ``subtype`` ``error_max_turns`` /
``error_max_budget_usd`` (``max_turns``, ``max_budget_usd``) is a silent bail with stop reason
``recursion_limit``; the CLI then exits non-zero and the SDK raises ``ResultError``, which reaches
the caller unchanged (the run's outcome ``error``, ``error.type`` ``ResultError``; a client that
keeps its CLI running raises nothing: outcome ``completed``). Another ``is_error`` result is an
``error``; a ``terminal_reason`` of an interrupted turn is ``cancelled``. No text is read.

The tenant is the ``tenant_scope`` around the reading of the stream. Every step is guarded; a
failure is counted, never raised.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, Final

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    HookMatcher,
    ResultMessage,
    query,
)
from claude_agent_sdk.types import HookContext, HookEvent, HookInput, HookJSONOutput, Message

from symfonic_otel.claude_agent_sdk.read import Verdict, turn_of, usage_of, verdict_of
from symfonic_otel.invocation.adapter import BookAdapter

__all__ = ["RecordedSession", "SymfonicRecorder"]

_NAME: Final = "SymfonicRecorder"
_MAX_BLOCKS: Final = 256


class SymfonicRecorder(BookAdapter):
    """Records the Claude Agent SDK runs read through it; see the module docstring.

    Its options are ``BookAdapter``'s.
    """

    adapter_name = _NAME

    def session(
        self, options: ClaudeAgentOptions | None = None, *, name: str = "claude"
    ) -> RecordedSession:
        """A session whose ``options`` carry the recorder's hooks (a copy; the caller's own
        hooks kept) and whose ``record`` reads one run's messages."""
        return RecordedSession(self, options or ClaudeAgentOptions(), name)

    def query(
        self,
        *,
        prompt: str | AsyncIterable[dict[str, Any]],
        options: ClaudeAgentOptions | None = None,
        name: str = "claude",
    ) -> AsyncIterator[Message]:
        """``claude_agent_sdk.query``, recorded as one run."""
        session = self.session(options, name=name)
        text = prompt if isinstance(prompt, str) else ""
        return session.record(query(prompt=prompt, options=session.options), prompt=text)


class RecordedSession:
    """The options of one query or client, and the reader of its turns (one at a time)."""

    def __init__(self, recorder: SymfonicRecorder, options: ClaudeAgentOptions, name: str) -> None:
        self._recorder = recorder
        self._book = recorder._book
        self._name = name
        self._run_id: str | None = None
        self._blocks: list[AssistantMessage] = []  # the model response being read
        self._ended_ns: int | None = None
        self._result: ResultMessage | None = None  # an error result: its exception may follow
        hooks: dict[HookEvent, list[HookMatcher]] = {
            event: list(matchers) for event, matchers in (options.hooks or {}).items()
        }
        ours: tuple[tuple[HookEvent, Any], ...] = (
            ("PreToolUse", self._pre_tool),
            ("PostToolUse", self._post_tool),
            ("PostToolUseFailure", self._post_tool),
        )
        for event, callback in ours:
            hooks.setdefault(event, []).append(HookMatcher(hooks=[callback]))
        self.options = dataclasses.replace(options, hooks=hooks)

    async def record(
        self, messages: AsyncIterator[Message], *, prompt: str = ""
    ) -> AsyncIterator[Message]:
        """Yield ``messages`` unchanged, recording them as one run (``prompt`` is kept only
        with content capture on)."""
        self._book.guard("start", self._start, prompt)
        try:
            async for message in messages:
                self._book.guard("message", self._message, message)
                yield message
        except BaseException as exc:
            self._book.guard("end", self._fail, exc)
            raise
        self._book.guard("end", self._finish)

    # --- the run ---------------------------------------------------------------------------------

    def _start(self, prompt: str) -> None:
        run_id = self._recorder._next_id("claude-agent-sdk")
        run = self._book.start(run_id, self._name, query=prompt)
        self._run_id = run_id if run is not None else None
        self._blocks, self._ended_ns, self._result = [], None, None
        if run is not None:
            run.model_started_ns = time.time_ns()

    def _message(self, message: Message) -> None:
        if isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
            if self._blocks and message.message_id != self._blocks[-1].message_id:
                self._flush()
            # the CLI sends a response's blocks one by one as they complete: the call ends at
            # the last one, not the first
            self._ended_ns = time.time_ns()
            if len(self._blocks) < _MAX_BLOCKS:
                self._blocks.append(message)
        elif isinstance(message, ResultMessage):
            self._flush()
            verdict = verdict_of(message)
            if verdict == "answered":
                self._end_run("answered", message)
            else:
                self._result = message  # ended when the stream ends or raises

    def _flush(self) -> None:
        run = self._book.get(self._run_id) if self._run_id is not None else None
        blocks, self._blocks = self._blocks, []
        if run is None or not blocks:
            return
        self._book.model_call(
            run,
            turn_of(blocks),
            model=blocks[-1].model,
            usage=usage_of(blocks[-1]),
            started_ns=run.model_started_ns,
            ended_ns=self._ended_ns,
            provider="anthropic",
        )
        run.model_started_ns = time.time_ns()

    def _end_run(self, verdict: Verdict, result: ResultMessage, raised: str | None = None) -> None:
        run_id, self._run_id, self._result = self._run_id, None, None
        if run_id is None:
            return
        if verdict == "answered":
            stop = (result.stop_reason or "end_turn")[:64]
            self._book.end(run_id, "answered", answer=result.result, stop_reason=stop)
        elif verdict == "capped":
            if raised is not None:
                self._book.end(run_id, "capped_raised", error_type=raised)
            else:
                self._book.end(run_id, "capped", answer=result.result)
        elif verdict == "cancelled":
            self._book.end(run_id, "cancelled")
        else:
            reason = raised or result.terminal_reason or result.subtype
            self._book.end(run_id, "error", error_type=str(reason)[:128])

    def _finish(self) -> None:
        self._flush()
        if self._result is not None:
            self._end_run(verdict_of(self._result), self._result)
        elif self._run_id is not None:  # the stream ended without a result
            run = self._book.get(self._run_id)
            last = run.last if run is not None else None
            run_id, self._run_id = self._run_id, None
            self._book.end(run_id, "answered", answer=last.text if last is not None else None)

    def _fail(self, exc: BaseException) -> None:
        self._flush()
        stopped = isinstance(exc, (GeneratorExit, asyncio.CancelledError))
        if self._result is not None:
            raised = None if stopped else type(exc).__name__[:128]
            self._end_run(verdict_of(self._result), self._result, raised)
        elif self._run_id is not None:
            run_id, self._run_id = self._run_id, None
            if stopped:
                self._book.end(run_id, "cancelled")
            else:
                self._book.end(run_id, "error", error_type=type(exc).__name__[:128])

    # --- tools (the SDK's hooks) -----------------------------------------------------------------

    async def _pre_tool(
        self, data: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        self._book.guard("pre_tool_use", self._tool_start, data)
        return {}

    async def _post_tool(
        self, data: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        self._book.guard("post_tool_use", self._tool_end, data)
        return {}

    def _tool_start(self, data: Any) -> None:
        run = self._book.get(self._run_id) if self._run_id is not None else None
        if run is None:
            return
        # The response asking for the tool is whole once the SDK runs it: recorded now, it ends
        # before the tool starts (not at the next response, after the tool's time).
        self._flush()
        name = data.get("tool_name")
        call_id = data.get("tool_use_id")
        self._book.start_tool(
            run, name if isinstance(name, str) else "", str(call_id or ""), data.get("tool_input")
        )

    def _tool_end(self, data: Any) -> None:
        run = self._book.get(self._run_id) if self._run_id is not None else None
        if run is None:
            return
        failed = data.get("hook_event_name") == "PostToolUseFailure"
        result = None if failed else data.get("tool_response")
        call_id = str(data.get("tool_use_id") or "")
        self._book.end_tool(run, call_id, result, "ToolError" if failed else None)
        run.model_started_ns = time.time_ns()
