"""With content capture on, a chat span whose input messages were cut to the capture limit
says so (``symfonic.content.truncated``) even when the tool definitions beside them were
whole: one part cut is enough for the flag."""

from __future__ import annotations

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.read.content import MAX_CONTENT_CHARS
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_shapes_support import cfg

ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
    },
}


def test_cut_input_messages_set_the_flag_beside_whole_tool_definitions(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel(["done"]).bind(tools=[ADD])
    model.invoke("x" * (MAX_CONTENT_CHARS + 100), config=cfg(captured))
    (chat,) = [span for span in telemetry.spans() if span.name.startswith("chat")]
    attributes = chat.attributes or {}
    assert semconv.GEN_AI_TOOL_DEFINITIONS in attributes
    assert attributes.get(semconv.CONTENT_TRUNCATED) is True
