"""The documented label caps of a handler's metrics, exactly: the first 200 model names, 32 node
names, 32 provider names, 200 tool names and 16 framework agent names keep their label; the
next one is ``_OTHER``."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.emit.agents import AgentEmitters
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.emit.vocabulary import label_or_other
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    LLMEndEvent,
    ToolCallStartEvent,
    ToolResultEvent,
)
from symfonic_otel.testing.telemetry import InMemoryTelemetry

USAGE = {"input_tokens": 1, "output_tokens": 1}
CALLS = semconv.CLIENT_OPERATION_DURATION.name


def _labels(telemetry: InMemoryTelemetry, name: str, key: str) -> dict[object, float]:
    counts: dict[object, float] = {}
    for attributes, value in telemetry.points(name):
        count = getattr(value, "count", value)
        counts[attributes.get(key)] = counts.get(attributes.get(key), 0) + count
    return counts


def test_the_201st_model_name_is_counted_under_other(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    for index in range(202):
        handler.llm_end(LLMEndEvent(f"model-{index}", "x", USAGE))
    models = _labels(telemetry, CALLS, semconv.GEN_AI_REQUEST_MODEL)
    assert len(models) == 201
    assert "model-199" in models
    assert models[semconv.OTHER_VALUE] == 2


def test_the_33rd_node_name_is_counted_under_other(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    for index in range(34):
        handler.llm_end(LLMEndEvent("gpt-4o", "x", USAGE, node_name=f"node-{index}"))
    nodes = _labels(telemetry, CALLS, semconv.NODE_NAME)
    assert len(nodes) == 33
    assert "node-31" in nodes
    assert nodes[semconv.OTHER_VALUE] == 2


def test_the_33rd_provider_an_adapter_names_is_counted_under_other(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    for index in range(34):
        handler.llm_end(LLMEndEvent("house-model", "x", USAGE), provider=f"provider-{index}")
    providers = _labels(telemetry, CALLS, semconv.GEN_AI_PROVIDER_NAME)
    assert len(providers) == 33
    assert "provider-31" in providers
    assert providers[semconv.OTHER_VALUE] == 2


def test_the_201st_tool_name_is_counted_under_other(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    for index in range(202):
        call_id = f"c{index}"
        handler.tool_call_start(ToolCallStartEvent(call_id, f"tool-{index}", run_id="r"))
        handler.tool_result(ToolResultEvent(call_id, f"tool-{index}", run_id="r"))
    handler.agent_end(AgentEndEvent("r", "a", 1.0, 1))
    tools = _labels(telemetry, semconv.EXECUTE_TOOL_DURATION.name, semconv.GEN_AI_TOOL_NAME)
    assert len(tools) == 201
    assert "tool-199" in tools
    assert tools[semconv.OTHER_VALUE] == 2


def test_the_17th_framework_agent_name_folds_into_other(telemetry: InMemoryTelemetry) -> None:
    """The documented 16 names per handler; the handler's own name takes no slot."""
    emitters = AgentEmitters(MetricEmitter(telemetry.meter_provider.get_meter("t"), "ops"))
    for index in range(17):
        emitters(f"agent-{index}")
    names = emitters.names()
    assert names[0] == "ops"
    assert names[1:17] == [f"agent-{index}" for index in range(16)]
    assert names[17:] == [semconv.OTHER_VALUE]


def test_an_open_label_with_nothing_printable_left_is_other() -> None:
    assert label_or_other(" search ") == "search"
    assert label_or_other("\x00\n") == semconv.OTHER_VALUE
    assert label_or_other("   ") == semconv.OTHER_VALUE
