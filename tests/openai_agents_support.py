"""Scripted OpenAI Agents SDK models and agents for tests (no network).

``ScriptedModel(script)`` is a real ``agents.Model``: each call takes the next step of its
script ("tool" = one ``lookup`` function call, "call:NAME" = a call of the tool NAME with no
arguments, such as a handoff's ``transfer_to_...``, "blank" = an empty text answer, any other
string = that text) and, as the SDK's own Chat Completions model does, reports itself in a
``generation`` span with its model name, usage and (when the run traces data) its output. The
last step repeats when the script runs out, so ``looping()`` calls a tool for ever.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from agents import Agent, Model, ModelResponse, Usage, function_tool
from agents.tracing import generation_span
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

__all__ = ["MODEL", "ScriptedModel", "agent", "answering", "blank", "looping"]

MODEL = "scripted-gpt"
_ids = itertools.count()


@function_tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}"


class ScriptedModel(Model):
    def __init__(self, script: Sequence[str], model: str = MODEL) -> None:
        self.script = list(script)
        self.model = model
        self.calls = 0

    def _step(self) -> str:
        step = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        return step

    async def get_response(
        self,
        system_instructions: Any,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        *,
        previous_response_id: Any = None,
        conversation_id: Any = None,
        prompt: Any = None,
    ) -> ModelResponse:
        with generation_span(model=self.model, disabled=tracing.is_disabled()) as span:
            step = self._step()
            n = next(_ids)
            output: list[Any]
            if step == "tool" or step.startswith("call:"):
                name, arguments = ("lookup", '{"q": "weather"}')
                if step != "tool":
                    name, arguments = step.removeprefix("call:"), "{}"
                output = [
                    ResponseFunctionToolCall(
                        id=f"fc{n}",
                        call_id=f"call{n}",
                        type="function_call",
                        name=name,
                        arguments=arguments,
                    )
                ]
                message: dict[str, Any] = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call{n}",
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        }
                    ],
                }
            else:
                text = "" if step == "blank" else step
                output = [
                    ResponseOutputMessage(
                        id=f"m{n}",
                        type="message",
                        role="assistant",
                        status="completed",
                        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
                    )
                ]
                message = {"role": "assistant", "content": text, "tool_calls": None}
            span.span_data.usage = {"input_tokens": 12, "output_tokens": 4}
            if tracing.include_data():
                span.span_data.output = [message]
            return ModelResponse(
                output=output,
                usage=Usage(requests=1, input_tokens=12, output_tokens=4, total_tokens=16),
                response_id=None,
            )

    async def stream_response(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
        raise NotImplementedError("the tests run the non-streaming path")
        yield


def agent(model: ScriptedModel, name: str = "helper", **kwargs: Any) -> Agent[Any]:
    return Agent(name=name, model=model, tools=[lookup], **kwargs)


def looping() -> ScriptedModel:
    return ScriptedModel(["tool"])


def answering(tool_turns: int = 1, text: str = "It is sunny.") -> ScriptedModel:
    return ScriptedModel(["tool"] * tool_turns + [text])


def blank() -> ScriptedModel:
    return ScriptedModel(["tool", "blank"])
