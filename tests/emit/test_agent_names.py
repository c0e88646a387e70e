"""The ``gen_ai.agent.name`` label is the framework's own agent name, a bounded set per handler.

The span processor (spans shaped as the GenAI conventions name them, on a real SDK tracer
provider) and the adapters (real Pydantic AI, OpenAI Agents SDK and LangChain agents over
scripted models): each counter series carries its run's agent; a run that names none keeps the
handler's ``agent_name``; past ``MAX_AGENT_NAMES`` names a new one folds into ``_OTHER`` (at the
cap, and one past). An adapter that fails inside counts the loss in ``dropped_events`` and the
agent's run goes on.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from agents import Runner
from opentelemetry.sdk.metrics.export import HistogramDataPoint
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from symfonic_otel import LangChainCallbackHandler, semconv, tenant_scope
from symfonic_otel.emit.agents import AgentEmitters
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.emit.vocabulary import MAX_AGENT_NAMES
from symfonic_otel.events import AgentStartEvent
from symfonic_otel.openai_agents import SymfonicTracingProcessor
from symfonic_otel.pydantic_ai import SymfonicCapability
from symfonic_otel.read.sanitise import MAX_LABEL_CHARS
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import openai_agents_support as oas
from tests.support.step_cap_support import QUESTION, script

RUNS = semconv.AGENT_RUNS.name
BAILS = semconv.SILENT_BAILS.name
STOPS = semconv.STOP_REASONS.name
AGENT = semconv.GEN_AI_AGENT_NAME
TEXT = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}])


def _names(telemetry: InMemoryTelemetry, metric: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for attrs, value in telemetry.points(metric):
        assert isinstance(value, int | float)
        found[attrs[AGENT]] = found.get(attrs[AGENT], 0) + value
    return found


def _peer_run(
    telemetry: InMemoryTelemetry, name: str | None, finish: str, tenant: str = "acme"
) -> None:
    tracer = telemetry.tracer_provider.get_tracer("peer-instrumentation")
    attrs: dict[str, Any] = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
    attrs[semconv.TENANT_ID] = tenant
    if name is not None:
        attrs[AGENT] = name
    with tracer.start_as_current_span("invoke_agent", attributes=attrs):
        chat = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
            semconv.GEN_AI_RESPONSE_FINISH_REASONS: (finish,),
        }
        if finish == "stop":
            chat[semconv.GEN_AI_OUTPUT_MESSAGES] = TEXT
        with tracer.start_as_current_span("chat", attributes=chat):
            pass


@pytest.fixture
def processor(telemetry: InMemoryTelemetry) -> SilentBailSpanProcessor:
    made = SilentBailSpanProcessor(meter_provider=telemetry.meter_provider, agent_name="ops")
    telemetry.tracer_provider.add_span_processor(made)
    return made


# --- the span processor ------------------------------------------------------------------------


def test_two_agents_on_one_processor_each_carry_their_name(
    telemetry: InMemoryTelemetry, processor: SilentBailSpanProcessor
) -> None:
    _peer_run(telemetry, "researcher", "tool_calls")
    _peer_run(telemetry, "triage", "stop")
    _peer_run(telemetry, None, "stop")
    _peer_run(telemetry, "LangGraph", "stop")  # a framework's default name: no name
    assert _names(telemetry, RUNS) == {"researcher": 1, "triage": 1, "ops": 2}
    assert _names(telemetry, BAILS) == {"researcher": 1}
    assert _names(telemetry, STOPS) == {"researcher": 1, "triage": 1, "ops": 2}
    zeros = {
        (attrs[AGENT], attrs[semconv.REACT_TERMINATION_REASON])
        for attrs, _ in telemetry.points(BAILS, include_zeros=True)
    }
    # Every name's bail series start at zero for the tenant: increase() sees its first bail.
    assert ("triage", "tool_calls_with_no_text") in zeros


def test_names_past_the_cap_fold_into_other(
    telemetry: InMemoryTelemetry, processor: SilentBailSpanProcessor
) -> None:
    names = [f"agent-{i}" for i in range(MAX_AGENT_NAMES)]
    for name in names:  # exactly at the cap: every name is its own series
        _peer_run(telemetry, name, "stop")
    assert _names(telemetry, RUNS) == dict.fromkeys(names, 1)
    _peer_run(telemetry, "one-too-many", "tool_calls")  # one past it
    _peer_run(telemetry, names[0], "stop")  # an admitted name keeps its series
    _peer_run(telemetry, None, "stop")  # the default takes no slot
    runs = _names(telemetry, RUNS)
    assert runs[semconv.OTHER_VALUE] == 1
    assert runs[names[0]] == 2
    assert runs["ops"] == 1
    assert "one-too-many" not in runs
    assert _names(telemetry, BAILS) == {semconv.OTHER_VALUE: 1}


def test_the_names_in_use_are_the_default_then_each_admitted_name_once(
    telemetry: InMemoryTelemetry,
) -> None:
    emitters = AgentEmitters(MetricEmitter(telemetry.meter_provider.get_meter("t"), "ops"), cap=2)
    for name in ("researcher", None, "  ", "researcher", "triage", "one-too-many", "ops"):
        emitters(name)
    assert emitters.names() == ["ops", "researcher", "triage", semconv.OTHER_VALUE]


def test_each_agents_tool_durations_carry_its_own_name(telemetry: InMemoryTelemetry) -> None:
    """Each name's view of the emitter keeps attribute sets of its own: a set built for one
    agent is never served to another (the default agent's calls come first here)."""
    emitters = AgentEmitters(MetricEmitter(telemetry.meter_provider.get_meter("t"), "ops"))
    for name in ("ops", "researcher", "ops", "researcher"):
        emitters(name).tool_call("acme", "search", None, 0.1, None)
    counts: dict[str, int] = {}
    for attrs, point in telemetry.points(semconv.EXECUTE_TOOL_DURATION.name):
        assert isinstance(point, HistogramDataPoint)
        counts[attrs[AGENT]] = point.count
    assert counts == {"ops": 2, "researcher": 2}


def test_an_abandoned_run_counts_as_an_orphan_of_its_agent(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(agent_name="support")
    handler.agent_start(AgentStartEvent("q", "r"))
    handler.close_open_runs()
    assert telemetry.points(semconv.ORPHANED_RUNS.name) == [({AGENT: "support"}, 1)]


def test_a_name_is_sanitised(
    telemetry: InMemoryTelemetry, processor: SilentBailSpanProcessor
) -> None:
    _peer_run(telemetry, "  writer\x00\n" + "x" * 1000, "stop")
    (name,) = _names(telemetry, RUNS)
    assert name.startswith("writer") and name.isprintable() and len(name) == MAX_LABEL_CHARS


# --- the adapters ----------------------------------------------------------------------------


def _pydantic_agent(name: str | None, answer: bool, handler: Any) -> Agent[None, str]:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if answer and len(messages) > 1:
            return ModelResponse(parts=[TextPart("It is sunny.")])
        return ModelResponse(parts=[ToolCallPart("lookup", {"q": "weather"})])

    agent = Agent(
        FunctionModel(model), name=name, capabilities=[SymfonicCapability(handler=handler)]
    )

    @agent.tool_plain
    def lookup(q: str) -> str:
        return "sunny"

    return agent


def test_pydantic_ai_runs_carry_their_agents_name(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    with tenant_scope("acme"):
        _pydantic_agent("researcher", True, handler).run_sync("Weather?")
        with pytest.raises(Exception, match="request_limit"):
            _pydantic_agent("triage", False, handler).run_sync(
                "Weather?", usage_limits=UsageLimits(request_limit=2)
            )
        _pydantic_agent(None, True, handler).run_sync("Weather?")
    assert _names(telemetry, RUNS) == {"researcher": 1, "triage": 1, "symfonic": 1}
    assert _names(telemetry, BAILS) == {"triage": 1}


def test_openai_agents_runs_carry_their_agents_name(telemetry: InMemoryTelemetry) -> None:
    with oas.installed(telemetry), tenant_scope("acme"):
        Runner.run_sync(oas.agent(oas.answering(), name="triage"), "Weather?")
        Runner.run_sync(oas.agent(oas.blank(), name="billing"), "Weather?")
    assert _names(telemetry, RUNS) == {"triage": 1, "billing": 1}
    assert _names(telemetry, BAILS) == {"billing": 1}


def test_langchain_runs_carry_the_graphs_name(telemetry: InMemoryTelemetry) -> None:
    from langchain.agents import create_agent

    from tests.support.langchain_support import add

    handler = LangChainCallbackHandler(handler=telemetry.handler())
    config: Any = {"callbacks": [handler], "metadata": {"tenant_id": "acme"}}
    named = create_agent(ScriptedChatModel(script(1)), [add], name="researcher")
    named.invoke(QUESTION, config=config)
    unnamed = create_agent(ScriptedChatModel(script(1)), [add])
    unnamed.invoke(QUESTION, config=config)
    assert _names(telemetry, RUNS) == {"researcher": 1, "symfonic": 1}


# --- adapter failures --------------------------------------------------------------------------


def _internal_errors(telemetry: InMemoryTelemetry) -> dict[str, float]:
    found: dict[str, float] = {}
    for attrs, value in telemetry.points(semconv.DROPPED_EVENTS.name):
        if attrs.get(semconv.TELEMETRY_DROP_REASON) == "internal_error":
            assert isinstance(value, int | float)
            kind = attrs[semconv.TELEMETRY_EVENT]
            found[kind] = found.get(kind, 0) + value
    return found


def _boom(*args: Any, **kwargs: Any) -> None:
    raise RuntimeError("adapter bug")


def test_a_failing_pydantic_ai_adapter_counts_the_loss_and_the_run_goes_on(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SymfonicCapability, "_model_call", _boom)
    result = _pydantic_agent("researcher", True, telemetry.handler()).run_sync("Weather?")
    assert result.output == "It is sunny."
    assert _internal_errors(telemetry) == {"pydantic_ai.model_request": 2}


def test_a_failing_openai_agents_adapter_counts_the_loss_and_the_run_goes_on(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    processor = SymfonicTracingProcessor(handler=telemetry.handler())
    monkeypatch.setattr(processor, "_span_end", _boom)
    from agents import set_trace_processors

    set_trace_processors([processor])
    try:
        result = Runner.run_sync(oas.agent(oas.answering(), name="triage"), "Weather?")
    finally:
        set_trace_processors([])
    assert result.final_output == "It is sunny."
    drops = _internal_errors(telemetry)
    assert set(drops) == {"openai_agents.on_span_end"}
    assert drops["openai_agents.on_span_end"] >= 1


def test_a_failing_langchain_adapter_counts_the_loss_and_the_run_goes_on(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain.agents import create_agent

    from tests.support.langchain_support import add

    handler = LangChainCallbackHandler(handler=telemetry.handler())
    monkeypatch.setattr(handler._models, "end_call", _boom)
    agent = create_agent(ScriptedChatModel(script(1)), [add])
    result = agent.invoke(QUESTION, config={"callbacks": [handler]})
    assert result["messages"][-1].text
    assert _internal_errors(telemetry).get("langchain.on_llm_end", 0) == 2
