"""An adapter's own attributes are merged under the handler's on every span it opens: on a key
both set, a tool span and any other call span keep the handler's operation, tool name and tenant;
a model call's span keeps the handler's model, except for the captured messages, which the
adapter (that saw the whole exchange) renders more fully than the event's text."""

from __future__ import annotations

import json

from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.recorded import span_attrs

FORGED = {
    "gen_ai.operation.name": "forged",
    "gen_ai.tool.name": "forged",
    "tenant.id": "forged",
    "app.key": "kept",
}


def test_tool_and_call_spans_keep_the_handler_s_keys(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(tenant_id="acme")
    handler.agent_start(AgentStartEvent("q", "r1"))
    tool = handler.start_tool("r1", "search", call_id="c1", attributes=FORGED)
    handler.end_tool(tool)
    call = handler.start_call("retrieval", "retrieval docs", run_id="r1", attributes=FORGED)
    handler.end_tool(call)
    handler.agent_end(AgentEndEvent("r1", "done", 10.0, 1))

    tool_attrs = span_attrs(telemetry.span("execute_tool search"))
    assert (
        tool_attrs["gen_ai.operation.name"],
        tool_attrs["gen_ai.tool.name"],
        tool_attrs["tenant.id"],
        tool_attrs["app.key"],
    ) == ("execute_tool", "search", "acme", "kept")
    call_attrs = span_attrs(telemetry.span("retrieval docs"))
    assert (
        call_attrs["gen_ai.operation.name"],
        call_attrs["tenant.id"],
        call_attrs["app.key"],
    ) == ("retrieval", "acme", "kept")


def test_a_model_call_keeps_the_handler_s_model_and_the_caller_s_messages(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(capture_content=True)
    rendered = json.dumps(
        [{"role": "assistant", "parts": [{"type": "tool_call", "name": "search"}]}]
    )
    handler.llm_end(
        LLMEndEvent(model="gpt-4o", output="plain text", usage={}),
        attributes={"gen_ai.output.messages": rendered, "gen_ai.request.model": "forged"},
    )
    attrs = span_attrs(telemetry.span("chat gpt-4o"))
    assert attrs["gen_ai.request.model"] == "gpt-4o"
    assert attrs["gen_ai.output.messages"] == rendered
