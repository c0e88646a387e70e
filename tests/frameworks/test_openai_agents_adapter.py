"""The OpenAI Agents SDK adapter, on the real SDK with scripted models (no network).

``SymfonicTracingProcessor`` is installed with the SDK's own ``set_trace_processors``; every
run goes through ``Runner.run_sync``. A model that calls tools until ``max_turns`` is a silent
bail for its tenant (stop reason ``recursion_limit``), one that answers is not; an empty final
output is a blank answer; the spans are shaped as the other adapters make them.
"""

from __future__ import annotations

from typing import Any

import pytest
from agents import (
    Agent,
    GuardrailFunctionOutput,
    InputGuardrailTripwireTriggered,
    MaxTurnsExceeded,
    OutputGuardrailTripwireTriggered,
    RunConfig,
    Runner,
    input_guardrail,
    output_guardrail,
    set_trace_processors,
)
from opentelemetry.trace import SpanKind, StatusCode

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.openai_agents import SymfonicTracingProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.bail_support import assert_raised_step_cap
from tests.support.openai_agents_support import (
    BAILS,
    MODEL,
    RUNS,
    STOPS,
    ScriptedModel,
    agent,
    answering,
    assert_guardrail_error,
    bails_of,
    blank,
    looping,
    run_agent,
)

# --- the step cap: MaxTurnsExceeded ---------------------------------------------------------------


def test_max_turns_is_a_silent_bail_for_its_tenant_with_stop_reason_recursion_limit(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    with tenant_scope("acme"), pytest.raises(MaxTurnsExceeded):
        run_agent(looping(), max_turns=3)

    assert_raised_step_cap(telemetry, "acme", "MaxTurnsExceeded")
    chats = [s for s in telemetry.spans() if s.name == f"chat {MODEL}"]
    tools = [s for s in telemetry.spans() if s.name == "execute_tool lookup"]
    assert len(chats) == 3 and len(tools) == 3  # three turns, each a call and its tool


@pytest.mark.parametrize(("max_turns", "bails"), [(3, 0), (2, 1)])
def test_max_turns_boundary_an_answer_on_the_last_allowed_turn_is_no_bail(
    telemetry: InMemoryTelemetry,
    processor: SymfonicTracingProcessor,
    max_turns: int,
    bails: int,
) -> None:
    """Two tool turns then the answer: three turns. ``max_turns=3`` lets it answer, 2 does not."""
    with tenant_scope("acme"):
        if bails:
            with pytest.raises(MaxTurnsExceeded):
                run_agent(answering(tool_turns=2), max_turns=max_turns)
        else:
            assert run_agent(answering(tool_turns=2), max_turns=max_turns).final_output
    assert bails_of(telemetry, "acme") == bails
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "acme"}) == 1


# --- answers and blank answers --------------------------------------------------------------------


def test_an_answer_counts_as_a_run_and_not_as_a_bail_with_our_span_shape(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    with tenant_scope("acme"):
        result = run_agent(answering())
    assert result.final_output == "It is sunny."

    assert telemetry.value(BAILS) == 0
    assert (
        telemetry.value(
            RUNS,
            {
                semconv.TENANT_ID: "acme",
                semconv.RUN_OUTCOME: "completed",
                semconv.RESPONSE_EMPTY: False,
            },
        )
        == 1
    )
    assert telemetry.value(STOPS, {semconv.RUN_STOP_REASON: "end_turn"}) == 1
    run = telemetry.span("invoke_agent helper")
    assert run.kind is SpanKind.INTERNAL and run.parent is None
    assert run.status.status_code is StatusCode.UNSET
    assert run.attributes is not None
    assert run.attributes[semconv.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert run.attributes[semconv.RESPONSE_EMPTY] is False
    chats = [s for s in telemetry.spans() if s.name == f"chat {MODEL}"]
    assert len(chats) == 2
    for chat in chats:
        assert chat.kind is SpanKind.CLIENT
        assert chat.parent is not None and chat.parent.span_id == run.context.span_id
        assert chat.attributes is not None
        assert chat.attributes[semconv.GEN_AI_REQUEST_MODEL] == MODEL
        assert chat.attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 12
        assert chat.attributes[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 4
    assert [c.attributes[semconv.GEN_AI_RESPONSE_FINISH_REASONS] for c in chats] == [
        ("tool_calls",),
        ("stop",),
    ]
    tool = telemetry.span("execute_tool lookup")
    assert tool.parent is not None and tool.parent.span_id == run.context.span_id
    assert telemetry.value("gen_ai.client.token.usage") == 4  # 2 calls x input and output


def test_an_empty_final_output_is_a_blank_answer_and_a_silent_bail(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    with tenant_scope("acme"):
        assert run_agent(blank()).final_output == ""
    assert bails_of(telemetry, "acme", "no_content_no_tool_calls") == 1
    where = {semconv.RUN_OUTCOME: "completed", semconv.RESPONSE_EMPTY: True}
    assert telemetry.value(RUNS, where) == 1
    run = telemetry.span("invoke_agent helper")
    assert run.attributes is not None and run.attributes[semconv.RESPONSE_EMPTY] is True


def test_without_traced_data_a_step_cap_is_still_a_bail_and_an_answer_is_unknown(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    """``trace_include_sensitive_data=False``: the SDK records no model output; the turn budget
    is read from the span error, the answer's blankness cannot be known (no flag)."""
    config = RunConfig(trace_include_sensitive_data=False)
    with tenant_scope("acme"):
        with pytest.raises(MaxTurnsExceeded):
            run_agent(looping(), max_turns=2, run_config=config)
        run_agent(blank(), run_config=config)
    assert bails_of(telemetry, "acme") == 1
    completed = [
        attributes
        for attributes, _ in telemetry.points(RUNS)
        if attributes[semconv.RUN_OUTCOME] == "completed"
    ]
    assert completed == [{**completed[0]}] and semconv.RESPONSE_EMPTY not in completed[0]


# --- tenants --------------------------------------------------------------------------------------


def test_the_tenant_is_the_scope_else_the_trace_metadata(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    config = RunConfig(trace_metadata={"tenant_id": "globex"})
    with pytest.raises(MaxTurnsExceeded):
        run_agent(looping(), max_turns=1, run_config=config)
    with tenant_scope("acme"), pytest.raises(MaxTurnsExceeded):
        run_agent(looping(), max_turns=1, run_config=config)
    run_agent(answering())
    assert bails_of(telemetry, "globex") == 1
    assert bails_of(telemetry, "acme") == 1
    assert telemetry.value(RUNS, {semconv.TENANT_ID: semconv.TENANT_UNKNOWN}) == 1


# --- handoffs and guardrails ----------------------------------------------------------------------


def test_a_handoff_stays_one_run_with_a_handoff_span(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    second = Agent(name="second", model=ScriptedModel(["Done."]))
    first = Agent(name="first", model=ScriptedModel(["call:transfer_to_second"]), handoffs=[second])
    with tenant_scope("acme"):
        result = Runner.run_sync(first, "help")
    assert result.final_output == "Done."
    assert telemetry.value(RUNS) == 1 and telemetry.value(BAILS) == 0
    run = telemetry.span("invoke_agent first")
    handoff = telemetry.span("handoff second")
    assert handoff.parent is not None and handoff.parent.span_id == run.context.span_id
    assert handoff.attributes is not None
    assert handoff.attributes[semconv.HANDOFF_FROM_AGENT] == "first"
    assert handoff.attributes[semconv.HANDOFF_TO_AGENT] == "second"
    agents = [
        s.attributes[semconv.GEN_AI_AGENT_NAME]
        for s in telemetry.spans()
        if s.attributes and s.name == f"chat {MODEL}"
    ]
    assert agents == ["first", "second"]


@input_guardrail
async def block_everything(ctx: Any, agent_: Any, user_input: Any) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)


@output_guardrail
async def block_answers(ctx: Any, agent_: Any, output: Any) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)


GUARDRAILS = {
    "input": ({"input_guardrails": [block_everything]}, InputGuardrailTripwireTriggered),
    "output": ({"output_guardrails": [block_answers]}, OutputGuardrailTripwireTriggered),
}


@pytest.mark.parametrize("where", sorted(GUARDRAILS))
def test_a_guardrail_trip_on_the_input_or_the_output_is_an_error_not_a_silent_bail(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor, where: str
) -> None:
    guardrails, tripped = GUARDRAILS[where]
    guarded = agent(answering(), **guardrails)
    with tenant_scope("acme"), pytest.raises(tripped):
        Runner.run_sync(guarded, "anything")
    assert_guardrail_error(telemetry)
    if where == "input":  # the SDK records an input guardrail's check as a span of its own
        check = telemetry.span("guardrail block_everything")
        assert (check.attributes or {})[semconv.GUARDRAIL_TRIGGERED] is True


# --- privacy --------------------------------------------------------------------------------------


def _texts(telemetry: InMemoryTelemetry) -> str:
    return repr([(s.attributes, [e.attributes for e in s.events]) for s in telemetry.spans()])


def test_no_answer_or_tool_payload_leaves_without_capture(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    run_agent(answering(text="The secret is 42."))
    seen = _texts(telemetry)
    assert "secret" not in seen and "weather" not in seen


def test_with_capture_on_the_answer_and_tool_payloads_are_recorded(
    telemetry: InMemoryTelemetry,
) -> None:
    capturing = SymfonicTracingProcessor(handler=telemetry.handler(capture_content=True))
    set_trace_processors([capturing])
    try:
        run_agent(answering(text="The secret is 42."))
    finally:
        set_trace_processors([])
    seen = _texts(telemetry)
    assert "The secret is 42." in seen
    tool = telemetry.span("execute_tool lookup")
    assert tool.attributes is not None
    assert "weather" in str(tool.attributes[semconv.GEN_AI_TOOL_CALL_ARGUMENTS])
    assert tool.attributes[semconv.GEN_AI_TOOL_CALL_RESULT] == "result for weather"
