"""The reference loop and ``OTelCallbackHandler`` together: spans and counters of a silent bail,
of a raising model and of a raising tool."""

from __future__ import annotations

import pytest

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.agent import FrameworkConfig, ReactAgent
from symfonic_otel.testing import InMemoryTelemetry, ScriptedChatModel
from tests.support.agent_support import TOOLS, call, turn
from tests.support.raising_support import assert_completed_with_failed_tool, assert_error_run


async def test_silent_bail_with_synthesis_produces_run_span_synthesis_span_and_counters(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    script = [
        turn(
            "",
            call("lookup", {"key": "x"}, f"c{i}"),
            finish="tool_calls",
            model="gpt-4o-mini-2024-07-18",
            usage=(50, 10),
        )
        for i in range(3)
    ] + [turn("x is value-of-x.", finish="stop", model="gpt-4o-mini-2024-07-18", usage=(80, 9))]
    agent = ReactAgent(
        ScriptedChatModel(script),
        TOOLS,
        config=FrameworkConfig(synthesize_on_empty_final=True),
        callbacks=[handler],
    )
    response = await agent.run("what is x?", run_id="bail-1")
    assert response.final_response == "x is value-of-x."

    run_span = telemetry.span(semconv.agent_span_name("symfonic"))
    assert run_span.attributes is not None
    assert run_span.attributes[semconv.RUN_ID] == "bail-1"
    assert run_span.attributes[semconv.REACT_TERMINATION_REASON] == "tool_calls_with_no_text"
    assert run_span.attributes[semconv.RESPONSE_EMPTY] is False
    # The loop cut the run on three identical calls: a silent bail, and a looping run.
    assert [e.name for e in run_span.events] == [
        semconv.EVENT_REACT_LOOP_END,
        semconv.EVENT_LOOP_DETECTED,
    ]

    chat_name = semconv.chat_span_name("gpt-4o-mini-2024-07-18")
    chats = [s for s in telemetry.spans() if s.name == chat_name]
    assert len(chats) == 4
    nodes = [str(dict(s.attributes or {}).get(semconv.NODE_NAME)) for s in chats]
    assert sorted(nodes) == sorted([semconv.NODE_REACT] * 3 + [semconv.NODE_SYNTHESIZE_FALLBACK])
    for chat in chats:
        assert chat.parent is not None
        assert run_span.context is not None
        assert chat.parent.span_id == run_span.context.span_id

    [(bail_attrs, bails)] = telemetry.points(semconv.SILENT_BAILS.name)
    assert bails == 1
    assert bail_attrs[semconv.REACT_TERMINATION_REASON] == "tool_calls_with_no_text"
    [(synthesis_attrs, fallbacks)] = telemetry.points(semconv.SYNTHESIS_FALLBACKS.name)
    assert fallbacks == 1
    assert synthesis_attrs[semconv.SYNTHESIS_RECOVERED] is True


class ModelDown(Exception):
    """A provider failure the loop does not know of."""


async def test_a_raising_model_reaches_the_caller_as_itself_and_the_run_is_error(
    telemetry: InMemoryTelemetry,
) -> None:
    down = ModelDown("provider down")
    script = [turn("", call("lookup", {"key": "x"}), finish="tool_calls"), down]
    agent = ReactAgent(ScriptedChatModel(script), TOOLS, callbacks=[telemetry.handler()])
    with tenant_scope("acme"), pytest.raises(ModelDown) as raised:
        await agent.run("what is x?")
    assert raised.value is down
    assert_error_run(telemetry, "acme", down, span=semconv.agent_span_name("symfonic"))


async def test_a_raising_tool_is_handed_to_the_model_and_the_run_completes(
    telemetry: InMemoryTelemetry,
) -> None:
    script = [
        turn("", call("explode", {"reason": "it"}), finish="tool_calls"),
        turn("The tool failed.", finish="stop"),
    ]
    agent = ReactAgent(ScriptedChatModel(script), TOOLS, callbacks=[telemetry.handler()])
    with tenant_scope("acme"):
        assert (await agent.run("try")).final_response == "The tool failed."
    assert_completed_with_failed_tool(
        telemetry, "acme", "execute_tool explode", span=semconv.agent_span_name("symfonic")
    )
