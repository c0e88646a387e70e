"""The OpenAI Agents SDK adapter, on the real SDK with scripted models (no network).

``SymfonicTracingProcessor`` is installed with the SDK's own ``set_trace_processors``; every
run goes through ``Runner.run_sync``. A model that calls tools until ``max_turns`` is a silent
bail for its tenant (stop reason ``recursion_limit``), one that answers is not; an empty final
output is a blank answer; the spans are shaped as the other adapters make them.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
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
from agents.tracing import generation_span
from openai_agents_support import MODEL, ScriptedModel, agent, answering, blank, looping
from opentelemetry.trace import SpanKind, StatusCode

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.openai_agents import SymfonicTracingProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry

BAILS = "symfonic.react.silent_bails"
RUNS = "symfonic.agent.runs"
STOPS = "symfonic.agent.stop_reasons"


@pytest.fixture
def processor(telemetry: InMemoryTelemetry) -> Iterator[SymfonicTracingProcessor]:
    """Ours as the SDK's only trace processor (nothing is sent to OpenAI's trace backend)."""
    made = SymfonicTracingProcessor(handler=telemetry.handler())
    set_trace_processors([made])
    yield made
    set_trace_processors([])
    assert made.open_runs == 0
    assert made.internal_failures() == {}


def _bails(telemetry: InMemoryTelemetry, tenant: str, reason: str | None = None) -> float:
    where: dict[str, Any] = {semconv.TENANT_ID: tenant}
    if reason is not None:
        where[semconv.REACT_TERMINATION_REASON] = reason
    return telemetry.value(BAILS, where)


def _run(model: ScriptedModel, max_turns: int = 10, **kwargs: Any) -> Any:
    return Runner.run_sync(agent(model), "What is the weather?", max_turns=max_turns, **kwargs)


# --- the step cap: MaxTurnsExceeded ---------------------------------------------------------------


def test_max_turns_is_a_silent_bail_for_its_tenant_with_stop_reason_recursion_limit(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    with tenant_scope("acme"), pytest.raises(MaxTurnsExceeded):
        _run(looping(), max_turns=3)

    assert _bails(telemetry, "acme", "tool_calls_with_no_text") == 1
    assert telemetry.value(BAILS) == 1
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "error"}) == 1
    assert telemetry.value(STOPS, {semconv.RUN_STOP_REASON: "recursion_limit"}) == 1
    run = telemetry.span("invoke_agent helper")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes is not None
    assert run.attributes[semconv.ERROR_TYPE] == "MaxTurnsExceeded"
    assert run.attributes[semconv.RUN_STOP_REASON] == "recursion_limit"
    assert run.attributes[semconv.REACT_TERMINATION_REASON] == "tool_calls_with_no_text"
    assert run.attributes[semconv.TENANT_ID] == "acme"
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
                _run(answering(tool_turns=2), max_turns=max_turns)
        else:
            assert _run(answering(tool_turns=2), max_turns=max_turns).final_output
    assert _bails(telemetry, "acme") == bails
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "acme"}) == 1


# --- answers and blank answers --------------------------------------------------------------------


def test_an_answer_counts_as_a_run_and_not_as_a_bail_with_our_span_shape(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    with tenant_scope("acme"):
        result = _run(answering())
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
        assert _run(blank()).final_output == ""
    assert _bails(telemetry, "acme", "no_content_no_tool_calls") == 1
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
            _run(looping(), max_turns=2, run_config=config)
        _run(blank(), run_config=config)
    assert _bails(telemetry, "acme") == 1
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
        _run(looping(), max_turns=1, run_config=config)
    with tenant_scope("acme"), pytest.raises(MaxTurnsExceeded):
        _run(looping(), max_turns=1, run_config=config)
    _run(answering())
    assert _bails(telemetry, "globex") == 1
    assert _bails(telemetry, "acme") == 1
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


def test_a_guardrail_trip_is_an_error_not_a_silent_bail(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    @input_guardrail
    async def block_everything(ctx: Any, agent_: Any, user_input: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

    guarded = agent(answering(), input_guardrails=[block_everything])
    with tenant_scope("acme"), pytest.raises(InputGuardrailTripwireTriggered):
        Runner.run_sync(guarded, "anything")
    assert telemetry.value(BAILS) == 0
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "error"}) == 1
    run = telemetry.span("invoke_agent helper")
    assert run.attributes is not None
    assert run.attributes[semconv.ERROR_TYPE] == semconv.GUARDRAIL_ERROR_TYPE
    check = telemetry.span("guardrail block_everything")
    assert check.attributes is not None and check.attributes[semconv.GUARDRAIL_TRIGGERED] is True


# --- privacy --------------------------------------------------------------------------------------


def _texts(telemetry: InMemoryTelemetry) -> str:
    return repr([(s.attributes, [e.attributes for e in s.events]) for s in telemetry.spans()])


def test_no_answer_or_tool_payload_leaves_without_capture(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    _run(answering(text="The secret is 42."))
    seen = _texts(telemetry)
    assert "secret" not in seen and "weather" not in seen


def test_with_capture_on_the_answer_and_tool_payloads_are_recorded(
    telemetry: InMemoryTelemetry,
) -> None:
    capturing = SymfonicTracingProcessor(handler=telemetry.handler(capture_content=True))
    set_trace_processors([capturing])
    try:
        _run(answering(text="The secret is 42."))
    finally:
        set_trace_processors([])
    seen = _texts(telemetry)
    assert "The secret is 42." in seen
    tool = telemetry.span("execute_tool lookup")
    assert tool.attributes is not None
    assert "weather" in str(tool.attributes[semconv.GEN_AI_TOOL_CALL_ARGUMENTS])
    assert tool.attributes[semconv.GEN_AI_TOOL_CALL_RESULT] == "result for weather"


# --- other paths: streaming, the Responses API, agents as tools, tool errors, threads ----------


async def test_the_streamed_path_bails_and_answers_alike(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    with tenant_scope("acme"):
        streamed = Runner.run_streamed(agent(looping()), "q", max_turns=2)
        with pytest.raises(MaxTurnsExceeded):
            async for _ in streamed.stream_events():
                pass
        streamed = Runner.run_streamed(agent(answering()), "q", max_turns=5)
        async for _ in streamed.stream_events():
            pass
    assert streamed.final_output == "It is sunny."
    assert _bails(telemetry, "acme", "tool_calls_with_no_text") == 1
    assert telemetry.value(RUNS, {semconv.RESPONSE_EMPTY: False}) == 1
    assert telemetry.value(STOPS, {semconv.RUN_STOP_REASON: "recursion_limit"}) == 1


@pytest.mark.parametrize(("script", "bails"), [(["tool", "Sunny."], 0), (["tool", "blank"], 1)])
def test_responses_api_turns_are_read_from_the_response_object(
    telemetry: InMemoryTelemetry,
    processor: SymfonicTracingProcessor,
    script: list[str],
    bails: int,
) -> None:
    with tenant_scope("acme"):
        _run(ScriptedModel(script, api="responses"))
    assert _bails(telemetry, "acme", "no_content_no_tool_calls") == bails
    chats = [s for s in telemetry.spans() if s.name == f"chat {MODEL}"]
    assert len(chats) == 2
    assert all(c.attributes and c.attributes[semconv.GEN_AI_RESPONSE_ID] for c in chats)
    assert [
        c.attributes[semconv.GEN_AI_RESPONSE_FINISH_REASONS] for c in chats if c.attributes
    ] == [
        ("tool_calls",),
        ("stop",),
    ]


def test_an_agent_used_as_a_tool_is_a_sub_run_under_the_tool_span(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    inner = Agent(name="researcher", model=ScriptedModel(["Found it."]))
    outer = Agent(
        name="lead",
        model=ScriptedModel(['call:research:{"input": "sources"}', "Here it is."]),
        tools=[inner.as_tool(tool_name="research", tool_description="Research.")],
    )
    with tenant_scope("acme"):
        assert Runner.run_sync(outer, "q").final_output == "Here it is."
    lead = telemetry.span("invoke_agent lead")
    sub = telemetry.span("invoke_agent researcher")
    tool = telemetry.span("execute_tool research")
    assert tool.parent is not None and tool.parent.span_id == lead.context.span_id
    assert sub.parent is not None and sub.parent.span_id == tool.context.span_id
    assert sub.attributes is not None and lead.attributes is not None
    assert sub.attributes[semconv.RUN_PARENT_ID] == lead.attributes[semconv.RUN_ID]
    assert sub.attributes[semconv.TENANT_ID] == "acme"
    assert telemetry.value(RUNS, {semconv.RESPONSE_EMPTY: False}) == 2
    assert telemetry.value(BAILS) == 0


def test_a_failing_tool_marks_its_span_and_the_run_goes_on(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    from agents import function_tool

    @function_tool
    def lookup(q: str) -> str:
        """Look something up."""
        raise ValueError("backend down")

    helper = Agent(name="helper", model=answering(), tools=[lookup])
    assert Runner.run_sync(helper, "q").final_output == "It is sunny."
    tool = telemetry.span("execute_tool lookup")
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes is not None
    assert tool.attributes[semconv.ERROR_TYPE] == semconv.TOOL_ERROR_TYPE
    assert telemetry.value(RUNS, {semconv.RESPONSE_EMPTY: False}) == 1


def test_concurrent_runs_in_threads_keep_their_tenants(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    def work(n: int) -> None:
        tenant = f"t{n % 4}"
        with tenant_scope(tenant):
            if n % 2:
                with pytest.raises(MaxTurnsExceeded):
                    _run(looping(), max_turns=2)
            else:
                _run(answering())

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(work, range(24)))
    for n in range(4):
        assert telemetry.value(RUNS, {semconv.TENANT_ID: f"t{n}"}) == 6
        assert _bails(telemetry, f"t{n}") == (6 if n % 2 else 0)


def test_the_trace_group_id_is_the_conversation_id(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    _run(answering(), run_config=RunConfig(group_id="conversation-7"))
    run = telemetry.span("invoke_agent helper")
    assert run.attributes is not None
    assert run.attributes[semconv.GEN_AI_CONVERSATION_ID] == "conversation-7"


def test_a_max_turns_handler_answering_with_a_canned_message_is_still_a_bail(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    def canned(data: Any) -> str:
        return "Sorry, I could not finish that."

    with tenant_scope("acme"):
        result = _run(looping(), max_turns=2, error_handlers={"max_turns": canned})
    assert result.final_output == "Sorry, I could not finish that."
    assert _bails(telemetry, "acme", "tool_calls_with_no_text") == 1
    assert telemetry.value(STOPS, {semconv.RUN_STOP_REASON: "recursion_limit"}) == 1


def test_without_task_spans_the_trace_is_the_run(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    """``RunConfig(tracing={"include_task_and_turn_spans": False})``: no task span; the trace
    is the run, handoffs included, and its end ends the run."""
    config = RunConfig(tracing={"include_task_and_turn_spans": False})
    second = Agent(name="second", model=ScriptedModel(["Done."]))
    first = Agent(name="first", model=ScriptedModel(["call:transfer_to_second"]), handoffs=[second])
    with tenant_scope("acme"):
        assert Runner.run_sync(first, "help", run_config=config).final_output == "Done."
        with pytest.raises(MaxTurnsExceeded):
            _run(looping(), max_turns=2, run_config=config)
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "acme"}) == 2
    assert telemetry.value(RUNS, {semconv.RESPONSE_EMPTY: False}) == 1
    assert _bails(telemetry, "acme", "tool_calls_with_no_text") == 1
    handoff = telemetry.span("handoff second")
    run = telemetry.span("invoke_agent first")
    assert handoff.parent is not None and handoff.parent.span_id == run.context.span_id


def test_an_output_guardrail_trip_is_an_error_not_a_silent_bail(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    @output_guardrail
    async def block_answers(ctx: Any, agent_: Any, output: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

    guarded = agent(answering(), output_guardrails=[block_answers])
    with pytest.raises(OutputGuardrailTripwireTriggered):
        Runner.run_sync(guarded, "anything")
    assert telemetry.value(BAILS) == 0
    run = telemetry.span("invoke_agent helper")
    assert run.attributes is not None
    assert run.attributes[semconv.ERROR_TYPE] == semconv.GUARDRAIL_ERROR_TYPE


class _FailingModel(ScriptedModel):
    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        with generation_span(model=self.model) as span:
            span.set_error({"message": "Error", "data": {}})
            raise RuntimeError("provider down")


def test_a_failing_model_call_is_an_error_run_and_no_bail(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    with tenant_scope("acme"), pytest.raises(RuntimeError):
        _run(_FailingModel(["tool"]))
    assert telemetry.value(BAILS) == 0
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "error"}) == 1
    chat = telemetry.span(f"chat {MODEL}")
    assert chat.status.status_code is StatusCode.ERROR
