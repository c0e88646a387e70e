"""What the Pydantic AI capability reads of each model response and of a run, on real agents
with a scripted ``FunctionModel``: each response's own usage, id, provider and finish reason;
the run's conversation; a structured output as the captured answer; a response's text read
bounded.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from symfonic_otel import semconv
from symfonic_otel.invocation.turns import MAX_TEXT_CHARS
from symfonic_otel.pydantic_ai import SymfonicCapability
from symfonic_otel.pydantic_ai.verdicts import turn_of
from symfonic_otel.testing.telemetry import InMemoryTelemetry

RUN = "invoke_agent helper"


def _tool_then_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if len(messages) < 3:
        return ModelResponse(
            parts=[ToolCallPart("lookup", {"q": "weather"})],
            usage=RequestUsage(input_tokens=7, output_tokens=3),
            provider_response_id="resp-1",
            provider_name="first-provider",
            finish_reason="tool_call",
        )
    return ModelResponse(
        parts=[TextPart("It is sunny.")],
        usage=RequestUsage(input_tokens=9, output_tokens=4),
        provider_response_id="resp-2",
        provider_name="second-provider",
        finish_reason="stop",
    )


def _agent(telemetry: InMemoryTelemetry, model: Any, **kwargs: Any) -> Agent[None, Any]:
    capture = kwargs.pop("capture_content", None)
    capability = SymfonicCapability(handler=telemetry.handler(capture_content=capture))
    agent: Agent[None, Any] = Agent(
        FunctionModel(model, model_name="scripted"), name="helper", capabilities=[capability],
        **kwargs,
    )  # fmt: skip

    @agent.tool_plain
    def lookup(q: str) -> str:
        """Look something up."""
        return f"result for {q}"

    return agent


def _chats(telemetry: InMemoryTelemetry) -> list[dict[str, Any]]:
    spans = sorted(
        (s for s in telemetry.spans() if s.name == "chat scripted"),
        key=lambda s: s.start_time or 0,
    )
    return [dict(s.attributes or {}) for s in spans]


def test_each_model_call_carries_its_own_responses_usage_id_provider_and_finish_reason(
    telemetry: InMemoryTelemetry,
) -> None:
    assert _agent(telemetry, _tool_then_answer).run_sync("What?").output == "It is sunny."
    first, second = _chats(telemetry)
    assert (
        first[semconv.GEN_AI_USAGE_INPUT_TOKENS],
        first[semconv.GEN_AI_USAGE_OUTPUT_TOKENS],
    ) == (7, 3)
    assert (
        second[semconv.GEN_AI_USAGE_INPUT_TOKENS],
        second[semconv.GEN_AI_USAGE_OUTPUT_TOKENS],
    ) == (9, 4)
    assert (first[semconv.GEN_AI_RESPONSE_ID], second[semconv.GEN_AI_RESPONSE_ID]) == (
        "resp-1",
        "resp-2",
    )
    assert first[semconv.GEN_AI_PROVIDER_NAME] == "first-provider"
    assert second[semconv.GEN_AI_PROVIDER_NAME] == "second-provider"
    assert tuple(first[semconv.GEN_AI_RESPONSE_FINISH_REASONS]) == ("tool_call",)
    assert tuple(second[semconv.GEN_AI_RESPONSE_FINISH_REASONS]) == ("stop",)


def test_the_runs_conversation_id_is_on_its_span(telemetry: InMemoryTelemetry) -> None:
    _agent(telemetry, _tool_then_answer).run_sync("What?", conversation_id="conv-9")
    assert (telemetry.span(RUN).attributes or {})[semconv.GEN_AI_CONVERSATION_ID] == "conv-9"


class _Forecast(BaseModel):
    sky: str


def test_a_structured_output_is_the_captured_answer_as_json(telemetry: InMemoryTelemetry) -> None:
    def forecast(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tool = info.output_tools[0].name
        return ModelResponse(parts=[ToolCallPart(tool, {"sky": "clear"})])

    agent = _agent(telemetry, forecast, output_type=_Forecast, capture_content=True)
    assert agent.run_sync("What?").output == _Forecast(sky="clear")
    run = telemetry.span(RUN).attributes or {}
    assert "clear" in str(run[semconv.GEN_AI_OUTPUT_MESSAGES])
    assert run[semconv.RESPONSE_EMPTY] is False


def test_a_huge_text_response_is_read_bounded() -> None:
    huge = "sunny " * 20_000  # 120 000 characters
    turn = turn_of(ModelResponse(parts=[TextPart(huge), TextPart(huge)]))
    assert len(turn.text) == MAX_TEXT_CHARS and turn.has_text_part
