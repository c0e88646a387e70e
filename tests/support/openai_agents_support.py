"""Scripted OpenAI Agents SDK models and agents for tests (no network).

``ScriptedModel(script)`` is a real ``agents.Model``: each call takes the next step of its
script ("tool" = one ``lookup`` function call; "call:NAME[:JSON]" = a call of the tool NAME
with those arguments, none by default, such as a handoff's ``transfer_to_...``; "blank" = an
empty text answer; any other string = that text) and, as the SDK's Chat Completions model
does, reports itself in a
``generation`` span with its model name, usage and (when the run traces data) its output;
``api="responses"`` reports a ``response`` span holding a ``Response`` as the Responses model
does, and the streamed path always does. The last step repeats when the script runs out, so
``looping()`` calls a tool for ever.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

from agents import Agent, Model, ModelResponse, Runner, Usage, function_tool, set_trace_processors
from agents.tracing import generation_span, response_span
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from symfonic_otel import semconv
from symfonic_otel.openai_agents import SymfonicTracingProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.bail_support import bails_of

__all__ = [
    "BAILS",
    "MODEL",
    "RUNS",
    "STOPS",
    "ScriptedModel",
    "agent",
    "answering",
    "assert_guardrail_error",
    "bails_of",
    "blank",
    "installed",
    "looping",
    "run_agent",
]

MODEL = "scripted-gpt"
BAILS = semconv.SILENT_BAILS.name
RUNS = semconv.AGENT_RUNS.name
STOPS = semconv.STOP_REASONS.name
_ids = itertools.count()


@function_tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}"


class ScriptedModel(Model):
    def __init__(self, script: Sequence[str], model: str = MODEL, api: str = "chat") -> None:
        self.script = list(script)
        self.model = model
        self.api = api
        self.calls = 0

    def _step(self) -> str:
        step = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        return step

    def _turn(self) -> tuple[list[Any], dict[str, Any]]:
        """The next step as Responses-API output items and as a chat-completions message."""
        step = self._step()
        n = next(_ids)
        if step == "tool" or step.startswith("call:"):
            name, arguments = ("lookup", '{"q": "weather"}')
            if step != "tool":
                name, _, arguments = step.removeprefix("call:").partition(":")
                arguments = arguments or "{}"
            call = {"id": f"call{n}", "type": "function"}
            return [
                ResponseFunctionToolCall(
                    id=f"fc{n}",
                    call_id=f"call{n}",
                    type="function_call",
                    name=name,
                    arguments=arguments,
                )
            ], {
                "role": "assistant",
                "content": None,
                "tool_calls": [{**call, "function": {"name": name, "arguments": arguments}}],
            }
        text = "" if step == "blank" else step
        return [
            ResponseOutputMessage(
                id=f"m{n}",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
            )
        ], {"role": "assistant", "content": text, "tool_calls": None}

    def _response(self, output: list[Any]) -> Response:
        return Response(
            id=f"resp{next(_ids)}",
            created_at=0,
            model=self.model,
            object="response",
            output=output,
            parallel_tool_calls=False,
            tool_choice="auto",
            tools=[],
            usage=ResponseUsage(
                input_tokens=12,
                output_tokens=4,
                total_tokens=16,
                input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
                output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
            ),
        )

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
        usage = Usage(requests=1, input_tokens=12, output_tokens=4, total_tokens=16)
        if self.api == "responses":  # as the SDK's Responses model reports itself
            with response_span(disabled=tracing.is_disabled()) as span:
                output, _ = self._turn()
                response = self._response(output)
                span.span_data.usage = {"input_tokens": 12, "output_tokens": 4}
                if tracing.include_data():
                    span.span_data.response = response
                return ModelResponse(output=output, usage=usage, response_id=response.id)
        with generation_span(model=self.model, disabled=tracing.is_disabled()) as span:
            output, message = self._turn()
            span.span_data.usage = {"input_tokens": 12, "output_tokens": 4}
            if tracing.include_data():
                span.span_data.output = [message]
            return ModelResponse(output=output, usage=usage, response_id=None)

    async def stream_response(
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
    ) -> AsyncIterator[Any]:
        """The whole turn as one ``response.completed`` event, in a ``response`` span."""
        with response_span(disabled=tracing.is_disabled()) as span:
            output, _ = self._turn()
            response = self._response(output)
            span.span_data.usage = {"input_tokens": 12, "output_tokens": 4}
            if tracing.include_data():
                span.span_data.response = response
            yield ResponseCompletedEvent(
                response=response, type="response.completed", sequence_number=0
            )


def agent(model: ScriptedModel, name: str = "helper", **kwargs: Any) -> Agent[Any]:
    return Agent(name=name, model=model, tools=[lookup], **kwargs)


def looping() -> ScriptedModel:
    return ScriptedModel(["tool"])


def answering(tool_turns: int = 1, text: str = "It is sunny.") -> ScriptedModel:
    return ScriptedModel(["tool"] * tool_turns + [text])


def blank() -> ScriptedModel:
    return ScriptedModel(["tool", "blank"])


@contextmanager
def installed(telemetry: InMemoryTelemetry) -> Iterator[SymfonicTracingProcessor]:
    """Ours as the SDK's only trace processor (nothing goes to OpenAI's trace backend); once
    the test is done it must hold no run and have logged no failure of its own."""
    made = SymfonicTracingProcessor(handler=telemetry.handler())
    set_trace_processors([made])
    try:
        yield made
    finally:
        set_trace_processors([])
    assert made.open_runs == 0
    assert made.internal_failures() == {}


def run_agent(model: ScriptedModel, max_turns: int = 10, **kwargs: Any) -> Any:
    return Runner.run_sync(agent(model), "What is the weather?", max_turns=max_turns, **kwargs)


def sdk_span(
    kind: str, span_id: str, trace_id: str, parent: str | None, error: Any = None, **data: Any
) -> Any:
    """A span as the Agents SDK hands it to a trace processor, without running the SDK (for
    orders and shapes a real run does not make)."""
    ids = {"span_id": span_id, "trace_id": trace_id, "parent_id": parent}
    unset = dict.fromkeys(("started_at", "ended_at", "trace_metadata"))
    span_data = SimpleNamespace(type=kind, **data)
    return SimpleNamespace(span_data=span_data, error=error, **ids, **unset)


def assert_guardrail_error(telemetry: InMemoryTelemetry) -> None:
    """A tripped guardrail ended the run of ``helper`` as an error of the guardrail's type, and
    no silent bail was counted."""
    assert telemetry.value(BAILS) == 0
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "error"}) == 1
    run = telemetry.span("invoke_agent helper")
    assert (run.attributes or {})[semconv.ERROR_TYPE] == semconv.GUARDRAIL_ERROR_TYPE
