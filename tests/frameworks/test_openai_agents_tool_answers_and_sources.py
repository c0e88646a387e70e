"""Agents SDK runs whose answer is a tool's output, and which of two sources the processor reads
a model call's usage and model from.

With ``tool_use_behavior="stop_on_first_tool"`` the run's final output is the tool's result:
its last model turn called a tool and wrote no text, yet the run answered; it is no silent bail.
A generation's usage is the span's own ``usage`` before the response's; its model the span's
``model`` unless that is blank.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from agents import Runner

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.openai_agents import SymfonicTracingProcessor, read
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.openai_agents_support import BAILS, RUNS, ScriptedModel, agent


def test_a_run_stopped_on_its_first_tool_answered_with_the_tools_output(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    stopping = agent(ScriptedModel(["tool"]), tool_use_behavior="stop_on_first_tool")
    with tenant_scope("acme"):
        result = Runner.run_sync(stopping, "What is the weather?")
    assert result.final_output == "result for weather"
    assert telemetry.value(BAILS) == 0
    where = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "completed"}
    assert telemetry.value(RUNS, where) == 1
    run = telemetry.span("invoke_agent helper").attributes or {}
    assert run[semconv.RESPONSE_EMPTY] is False


def test_the_spans_own_usage_comes_before_the_responses() -> None:
    response_usage = SimpleNamespace(model_dump=lambda: {"input_tokens": 90, "output_tokens": 30})
    span_usage = {"input_tokens": 12, "output_tokens": 4}
    assert read.usage(span_usage, response_usage) == {"input_tokens": 12, "output_tokens": 4}
    assert read.usage(None, response_usage) == {"input_tokens": 90, "output_tokens": 30}


def test_a_blank_model_on_the_span_falls_back_to_the_responses_model() -> None:
    response = SimpleNamespace(model="gpt-from-response")
    assert read.model_name(SimpleNamespace(model="", response=response)) == "gpt-from-response"
    assert read.model_name(SimpleNamespace(model="gpt-span", response=response)) == "gpt-span"


class _ResponseCountsDiffer(ScriptedModel):
    """A Responses-API model whose response object counts other tokens than its span's usage."""

    def _response(self, output: list[Any]) -> Any:
        response = super()._response(output)
        assert response.usage is not None
        response.usage.input_tokens, response.usage.output_tokens = 90, 30
        return response


def test_a_response_spans_model_call_takes_the_spans_own_usage(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    Runner.run_sync(agent(_ResponseCountsDiffer(["It is sunny."], api="responses")), "Weather?")
    (chat,) = [s.attributes or {} for s in telemetry.spans() if s.name.startswith("chat")]
    assert (chat[semconv.GEN_AI_USAGE_INPUT_TOKENS], chat[semconv.GEN_AI_USAGE_OUTPUT_TOKENS]) == (
        12,
        4,
    )
