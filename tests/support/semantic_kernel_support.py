"""A scripted Semantic Kernel chat service (no network) and a kernel with one ``lookup`` tool.

``ScriptedChat`` is a real ``ChatCompletionClientBase``: Semantic Kernel's own auto function
invocation loop drives it. It calls ``lookup`` while function calling is on (the request carries
tools, set and reset by the same callbacks as the OpenAI connector) and fewer than ``tool_turns``
results are in, else answers; the final request the loop makes with function calling switched
off answers ``forced``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from typing import Any, ClassVar

from semantic_kernel import Kernel
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.completion_usage import CompletionUsage
from semantic_kernel.connectors.ai.function_calling_utils import (
    update_settings_from_function_call_configuration,
)
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.connectors.ai.open_ai import OpenAIChatPromptExecutionSettings
from semantic_kernel.contents import (
    AuthorRole,
    ChatHistory,
    ChatMessageContent,
    FunctionCallContent,
    FunctionResultContent,
    StreamingChatMessageContent,
    TextContent,
)
from semantic_kernel.contents.streaming_text_content import StreamingTextContent
from semantic_kernel.functions import KernelArguments, kernel_function

FOREVER = 10**6


class ScriptedChat(ChatCompletionClientBase):
    SUPPORTS_FUNCTION_CALLING: ClassVar[bool] = True
    tool_turns: int = FOREVER
    answer: str = "It is sunny."
    forced: str = "Probably sunny."
    fail: bool = False
    answer_call: int = 0  # this call (1-based) answers whatever the script says
    calls: int = 0

    def get_prompt_execution_settings_class(self) -> type[OpenAIChatPromptExecutionSettings]:
        return OpenAIChatPromptExecutionSettings

    def _update_function_choice_settings_callback(self) -> Callable[..., None]:
        return update_settings_from_function_call_configuration

    def _reset_function_choice_settings(self, settings: Any) -> None:
        settings.tool_choice = None
        settings.tools = None

    def _reply(self, history: ChatHistory, settings: Any) -> tuple[list[Any], str]:
        self.calls += 1
        if self.fail:
            raise ConnectionError("model unavailable")
        done = sum(
            1 for m in history.messages for i in m.items if isinstance(i, FunctionResultContent)
        )
        if settings.tools and done < self.tool_turns and self.calls != self.answer_call:
            call = FunctionCallContent(
                id=f"call-{done}",
                function_name="lookup",
                plugin_name="weather",
                arguments=json.dumps({"q": "weather"}),
            )
            return [call], "tool_calls"
        return [self.answer if settings.tools else self.forced], "stop"

    async def _inner_get_chat_message_contents(
        self, chat_history: ChatHistory, settings: Any
    ) -> list[ChatMessageContent]:
        parts, finish = self._reply(chat_history, settings)
        items = [TextContent(text=p) if isinstance(p, str) else p for p in parts]
        message = ChatMessageContent(
            role=AuthorRole.ASSISTANT,
            items=items,
            ai_model_id="scripted",
            finish_reason=finish,
            metadata={"usage": CompletionUsage(prompt_tokens=10, completion_tokens=5)},
        )
        return [message]

    async def _inner_get_streaming_chat_message_contents(
        self, chat_history: ChatHistory, settings: Any, function_invoke_attempt: int = 0
    ) -> AsyncGenerator[list[StreamingChatMessageContent], Any]:
        parts, finish = self._reply(chat_history, settings)
        for part in parts:
            items: list[Any] = [
                StreamingTextContent(choice_index=0, text=part) if isinstance(part, str) else part
            ]
            yield [
                StreamingChatMessageContent(
                    role=AuthorRole.ASSISTANT,
                    choice_index=0,
                    items=items,
                    ai_model_id="scripted",
                    finish_reason=finish,
                    function_invoke_attempt=function_invoke_attempt,
                )
            ]


class Weather:
    @kernel_function(name="lookup", description="Look something up.")
    def lookup(self, q: str) -> str:
        return f"result for {q}"


def kernel(chat: ScriptedChat, plugin: object | None = None) -> Kernel:
    built = Kernel()
    built.add_service(chat)
    built.add_plugin(plugin if plugin is not None else Weather(), plugin_name="weather")
    return built


def arguments(attempts: int = 5, **values: Any) -> KernelArguments:
    settings = OpenAIChatPromptExecutionSettings(
        service_id=None,
        function_choice_behavior=FunctionChoiceBehavior.Auto(maximum_auto_invoke_attempts=attempts),
    )
    return KernelArguments(settings=settings, **values)


def chat(**kwargs: Any) -> ScriptedChat:
    return ScriptedChat(ai_model_id="scripted", service_id="scripted", **kwargs)
