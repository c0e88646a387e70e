"""A Semantic Kernel prompt that calls functions until its attempt cap: what the filters record.

A scripted chat service stands in for a real model (no network); in-memory telemetry shows the
result. Semantic Kernel raises nothing at the cap: it makes one last request without function
calling and returns that reply.
"""

import asyncio
import json
from typing import Any, ClassVar

from semantic_kernel import Kernel
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.function_calling_utils import (
    update_settings_from_function_call_configuration,
)
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.connectors.ai.open_ai import OpenAIChatPromptExecutionSettings
from semantic_kernel.contents import AuthorRole, ChatMessageContent, FunctionCallContent
from semantic_kernel.functions import KernelArguments, kernel_function

from symfonic_otel import tenant_scope
from symfonic_otel.semantic_kernel import SymfonicFilters
from symfonic_otel.testing.telemetry import InMemoryTelemetry


class AlwaysCallsATool(ChatCompletionClientBase):
    """Calls ``lookup`` while the request offers tools; answers when it offers none."""

    SUPPORTS_FUNCTION_CALLING: ClassVar[bool] = True

    def get_prompt_execution_settings_class(self) -> Any:
        return OpenAIChatPromptExecutionSettings

    def _update_function_choice_settings_callback(self) -> Any:
        return update_settings_from_function_call_configuration

    def _reset_function_choice_settings(self, settings: Any) -> None:
        settings.tools = settings.tool_choice = None

    async def _inner_get_chat_message_contents(self, history: Any, settings: Any) -> Any:
        if not settings.tools:
            return [ChatMessageContent(role=AuthorRole.ASSISTANT, content="Probably sunny.")]
        call = FunctionCallContent(
            id=f"call-{len(history.messages)}",
            function_name="lookup",
            plugin_name="weather",
            arguments=json.dumps({"q": "weather"}),
        )
        return [ChatMessageContent(role=AuthorRole.ASSISTANT, items=[call])]


class Weather:
    @kernel_function(name="lookup", description="Look something up.")
    def lookup(self, q: str) -> str:
        return "nothing found"


telemetry = InMemoryTelemetry()
kernel = SymfonicFilters(handler=telemetry.handler()).register(Kernel())
kernel.add_service(AlwaysCallsATool(ai_model_id="scripted"))
kernel.add_plugin(Weather(), plugin_name="weather")
helper = kernel.add_function(plugin_name="agent", function_name="helper", prompt="{{$input}}")
behavior = FunctionChoiceBehavior.Auto(maximum_auto_invoke_attempts=3)
settings = OpenAIChatPromptExecutionSettings(function_choice_behavior=behavior)

with tenant_scope("acme"):
    arguments = KernelArguments(settings=settings, input="What is the weather?")
    answer = asyncio.run(kernel.invoke(helper, arguments))
print("answer from Semantic Kernel:", answer)  # answer from Semantic Kernel: Probably sunny.

bails = telemetry.value("symfonic.react.silent_bails", {"tenant.id": "acme"})
fallbacks = telemetry.value("symfonic.react.synthesis_fallbacks", {"tenant.id": "acme"})
run = telemetry.span("invoke_agent helper").attributes or {}
print("silent bails:", int(bails))  # silent bails: 1
print("forced answers:", int(fallbacks))  # forced answers: 1
print("stop reason:", run["symfonic.run.stop_reason"])  # stop reason: recursion_limit
