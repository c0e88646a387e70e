"""Live: the framework adapters -> a real Prometheus with the shipped rules -> the page.

Three tenants run real agents with scripted models: one on the OpenAI Agents SDK keeps calling
tools until ``max_turns``, one on Pydantic AI until ``UsageLimits(request_limit=...)``, and one
answers on both frameworks. Prometheus scrapes the ``configure_telemetry`` endpoint and
evaluates the shipped rules (every window and ``for:`` divided by ``FACTOR``): the silent-bail
page fires for the two bailing tenants, never for the one that answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import MaxTurnsExceeded, Runner, set_trace_processors
from pydantic_ai import Agent, UsageLimitExceeded
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from symfonic_otel import OTelCallbackHandler, tenant_scope
from symfonic_otel.openai_agents import SymfonicTracingProcessor
from symfonic_otel.pydantic_ai import SymfonicCapability
from tests.support.live_paging import live_paging
from tests.support.openai_agents_support import agent as agents_agent
from tests.support.openai_agents_support import answering, looping

FACTOR = 30  # 1h -> 2 min, 5m -> 10 s, `for: 2m` -> 4 s
PAUSE_S = 0.2  # between rounds: ~4 runs per second per tenant, 20 runs within seconds
AGENTS_BAILER, PYDANTIC_BAILER, STEADY = "agents-bailer", "pydantic-bailer", "steady"

pytestmark = pytest.mark.timeout(240)


def _pydantic_model(answer: bool) -> FunctionModel:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if answer and len(messages) > 2:
            return ModelResponse(parts=[TextPart("It is sunny.")])
        return ModelResponse(parts=[ToolCallPart("lookup", {"q": "weather"})])

    return FunctionModel(model, model_name="scripted")


def _pydantic_agent(handler: OTelCallbackHandler, answer: bool) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(
        _pydantic_model(answer), name="helper", capabilities=[SymfonicCapability(handler=handler)]
    )

    @agent.tool_plain
    def lookup(q: str) -> str:
        return f"result for {q}"

    return agent


def _round(handler: OTelCallbackHandler) -> None:
    """One run per tenant (two for the steady one: one per framework)."""
    with tenant_scope(AGENTS_BAILER), pytest.raises(MaxTurnsExceeded):
        Runner.run_sync(agents_agent(looping()), "q", max_turns=2)
    with tenant_scope(PYDANTIC_BAILER), pytest.raises(UsageLimitExceeded):
        _pydantic_agent(handler, answer=False).run_sync(
            "q", usage_limits=UsageLimits(request_limit=2)
        )
    with tenant_scope(STEADY):
        assert Runner.run_sync(agents_agent(answering()), "q", max_turns=5).final_output
        assert _pydantic_agent(handler, answer=True).run_sync("q").output


def test_the_page_fires_for_the_bailing_tenants_of_both_frameworks_only(tmp_path: Path) -> None:
    with live_paging(tmp_path, FACTOR) as live:
        handler = live.handler
        processor = SymfonicTracingProcessor(handler=handler)
        set_trace_processors([processor])
        try:
            fired, ever = live.watch(
                lambda: _round(handler), PAUSE_S, {AGENTS_BAILER, PYDANTIC_BAILER}
            )
        finally:
            set_trace_processors([])
    assert STEADY not in ever
    assert processor.internal_failures() == {}
    counts: dict[str, Any] = {"fired": sorted(fired), "ever": sorted(ever)}
    print(counts)
