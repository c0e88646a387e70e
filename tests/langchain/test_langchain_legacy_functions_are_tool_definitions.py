"""A model bound with the legacy ``functions`` keyword (OpenAI function calling before tools)
offers those functions as its tools: with content capture on, the chat span carries them as
its tool definitions, as it does for ``tools``."""

from __future__ import annotations

import json

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_shapes_support import cfg

ADD = {
    "name": "add",
    "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
}


def test_functions_bound_to_a_model_are_its_tool_definitions(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel(["done"]).bind(functions=[ADD])
    model.invoke("add them", config=cfg(captured))
    (chat,) = [span for span in telemetry.spans() if span.name.startswith("chat")]
    definitions = json.loads(str((chat.attributes or {})[semconv.GEN_AI_TOOL_DEFINITIONS]))
    assert [definition["name"] for definition in definitions] == ["add"]
