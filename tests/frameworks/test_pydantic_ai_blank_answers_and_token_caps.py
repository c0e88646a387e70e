"""The Pydantic AI capability's verdicts at the edges its other tests leave alone.

A whitespace-only answer is no answer (the agent accepts it as its output, the user reads
nothing); a run budget that runs out is a step cap whatever the last turn held, so a token
limit crossed by a text turn is ``tool_calls_with_no_text`` like a request limit.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent, UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.pydantic_ai import SymfonicCapability
from symfonic_otel.testing.telemetry import InMemoryTelemetry

BAILS = "symfonic.react.silent_bails"
RUNS = "symfonic.agent.runs"


def _answering(text: str) -> Any:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(text)])

    return model


def _agent(telemetry: InMemoryTelemetry, text: str) -> Agent[None, str]:
    capability = SymfonicCapability(handler=telemetry.handler())
    return Agent(
        FunctionModel(_answering(text), model_name="scripted"),
        name="helper",
        capabilities=[capability],
    )


@pytest.mark.parametrize(("answer", "bails"), [(" \n\t ", 1), (" ok ", 0)])
def test_a_whitespace_only_answer_is_a_silent_bail(
    telemetry: InMemoryTelemetry, answer: str, bails: int
) -> None:
    with tenant_scope("acme"):
        assert _agent(telemetry, answer).run_sync("q").output == answer
    where = {
        semconv.TENANT_ID: "acme",
        semconv.REACT_TERMINATION_REASON: "no_content_no_tool_calls",
    }
    assert telemetry.value(BAILS, where) == bails
    assert telemetry.value(BAILS) == bails
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "completed"}) == 1
    run = telemetry.span("invoke_agent helper")
    assert run.attributes is not None
    assert run.attributes[semconv.RESPONSE_EMPTY] is bool(bails)


def test_a_token_budget_crossed_by_a_text_turn_is_a_step_cap(
    telemetry: InMemoryTelemetry,
) -> None:
    agent = _agent(telemetry, "It is sunny today, my friend, really.")
    with tenant_scope("acme"), pytest.raises(UsageLimitExceeded):
        agent.run_sync("q", usage_limits=UsageLimits(output_tokens_limit=2))
    where = {semconv.TENANT_ID: "acme", semconv.REACT_TERMINATION_REASON: "tool_calls_with_no_text"}
    assert telemetry.value(BAILS, where) == 1
    assert telemetry.value(BAILS) == 1
    run = telemetry.span("invoke_agent helper")
    assert run.attributes is not None
    assert run.attributes[semconv.RUN_STOP_REASON] == semconv.STOP_REASON_RECURSION_LIMIT
    assert run.attributes[semconv.ERROR_TYPE] == "UsageLimitExceeded"
