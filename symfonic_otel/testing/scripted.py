"""``ScriptedChatModel``: a chat model that replays a script, for tests without a provider.

Each model call consumes the next script entry: an ``AIMessage`` (returned as a copy, with its
content blocks, tool calls, ``usage_metadata`` and ``response_metadata``), a ``str`` (shorthand
for a text-only ``AIMessage``) or an exception instance (raised, as a provider error or an
interrupt would be; note that LangChain's ``ainvoke`` runs the model in a child task, so
``KeyboardInterrupt`` there escapes the event loop: script it on streaming calls, or use
``latency_s`` and cancel the task instead). Every call is recorded: the messages the model
saw, whether tools were bound, and whether it streamed. ``bind_tools`` binds like a real
model (the result shares the script and the call log with the model it came from).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

__all__ = ["ScriptEntry", "ScriptExhaustedError", "ScriptedCall", "ScriptedChatModel"]

ScriptEntry = AIMessage | str | BaseException


class ScriptExhaustedError(AssertionError):
    """The model was called more times than the script has entries."""


@dataclass(frozen=True)
class ScriptedCall:
    """One recorded model call."""

    messages: tuple[BaseMessage, ...]
    tools: tuple[str, ...]
    streamed: bool
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def tools_bound(self) -> bool:
        return bool(self.tools)


def _tool_names(tools: Any) -> tuple[str, ...]:
    names: list[str] = []
    for item in tools or ():
        if isinstance(item, dict):
            function = item.get("function")
            name = function.get("name") if isinstance(function, dict) else item.get("name")
            names.append(str(name))
        else:
            names.append(str(getattr(item, "name", item)))
    return tuple(names)


class ScriptedChatModel(BaseChatModel):
    """Replays ``script`` one entry per call; see the module docstring."""

    script: list[Any]
    model_name: str = "scripted-chat"
    chunk_size: int = 8
    """Characters per streamed text chunk, so ``stream`` yields several deltas."""
    latency_s: float = 0.0
    """Seconds each async call waits before answering (to test timeouts and cancellation)."""

    _cursor: int = PrivateAttr(default=0)
    _calls: list[ScriptedCall] = PrivateAttr(default_factory=list)
    _bindings: list[tuple[str, ...]] = PrivateAttr(default_factory=list)

    def __init__(self, script: Iterable[ScriptEntry] = (), **kwargs: Any) -> None:
        kwargs["script"] = list(script)
        super().__init__(**kwargs)
        for entry in self.script:
            if not isinstance(entry, AIMessage | str | BaseException):
                raise TypeError(
                    "script entries must be AIMessage, str or an exception instance, "
                    f"got {type(entry).__name__}"
                )
        if self.chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {self.chunk_size!r}")

    # --- inspection ----------------------------------------------------------------------------

    @property
    def calls(self) -> list[ScriptedCall]:
        """Every call so far, in order (shared with models returned by ``bind_tools``)."""
        return list(self._calls)

    @property
    def bound_tool_sets(self) -> list[tuple[str, ...]]:
        """Tool names of each ``bind_tools`` call."""
        return list(self._bindings)

    @property
    def remaining(self) -> int:
        """Script entries not consumed yet."""
        return len(self.script) - self._cursor

    # --- BaseChatModel -------------------------------------------------------------------------

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        formatted = [convert_to_openai_tool(item) for item in tools]
        self._bindings.append(_tool_names(formatted))
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def _next(
        self, messages: list[BaseMessage], kwargs: dict[str, Any], streamed: bool
    ) -> AIMessage:
        self._calls.append(
            ScriptedCall(
                messages=tuple(messages),
                tools=_tool_names(kwargs.get("tools")),
                streamed=streamed,
                kwargs={k: v for k, v in kwargs.items() if k != "tools"},
            )
        )
        if self._cursor >= len(self.script):
            raise ScriptExhaustedError(
                f"ScriptedChatModel called {len(self._calls)} times; "
                f"its script has {len(self.script)} entries"
            )
        entry = self.script[self._cursor]
        self._cursor += 1
        if isinstance(entry, BaseException):
            raise entry
        if isinstance(entry, str):
            return AIMessage(content=entry)
        copied: AIMessage = entry.model_copy(deep=True)
        return copied

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._next(messages, kwargs, False))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        return ChatResult(generations=[ChatGeneration(message=self._next(messages, kwargs, False))])

    def _chunks(self, message: AIMessage) -> Iterator[ChatGenerationChunk]:
        """Split a scripted message into stream chunks that merge back into it."""
        content = message.content
        if isinstance(content, str):
            size = self.chunk_size
            for start in range(0, len(content), size):
                piece = content[start : start + size]
                yield ChatGenerationChunk(message=AIMessageChunk(content=piece, id=message.id))
            tail: str | list[Any] = ""
        else:
            for block in content:
                yield ChatGenerationChunk(message=AIMessageChunk(content=[block], id=message.id))
            tail = []
        calls = [
            {
                "name": call["name"],
                "args": json.dumps(call["args"]),
                "id": call.get("id"),
                "index": index,
                "type": "tool_call_chunk",
            }
            for index, call in enumerate(message.tool_calls)
        ]
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content=tail,
                id=message.id,
                tool_call_chunks=calls,  # type: ignore[arg-type]
                usage_metadata=message.usage_metadata,
                response_metadata=dict(message.response_metadata),
                additional_kwargs=dict(message.additional_kwargs),
            )
        )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        yield from self._chunks(self._next(messages, kwargs, True))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        for chunk in self._chunks(self._next(messages, kwargs, True)):
            if run_manager is not None and isinstance(chunk.message.content, str):
                await run_manager.on_llm_new_token(chunk.message.content, chunk=chunk)
            yield chunk
