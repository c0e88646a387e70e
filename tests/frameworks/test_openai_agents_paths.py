"""The OpenAI Agents SDK adapter on the SDK's other paths (real SDK, scripted models).

The streamed path, Responses-API turns, agents used as tools, failing tools and models, threads,
conversation ids, runs without task spans, ``max_turns`` handlers (guardrails: the adapter's
tests).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from agents import (
    Agent,
    MaxTurnsExceeded,
    RunConfig,
    Runner,
    function_tool,
)
from agents.tracing import custom_span, generation_span
from opentelemetry.trace import StatusCode

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.openai_agents import SymfonicTracingProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.openai_agents_support import (
    BAILS,
    MODEL,
    RUNS,
    STOPS,
    ScriptedModel,
    agent,
    answering,
    bails_of,
    looping,
    run_agent,
)

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
    assert bails_of(telemetry, "acme", "tool_calls_with_no_text") == 1
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
        run_agent(ScriptedModel(script, api="responses"))
    assert bails_of(telemetry, "acme", "no_content_no_tool_calls") == bails
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


def test_an_agent_run_inside_a_custom_span_of_a_run_sits_under_that_run(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    """A sub-run whose parent span is no tool span (a custom span the tool opened) hangs from
    the outer run's span: one trace, not a new one."""
    inner = Agent(name="researcher", model=ScriptedModel(["Found it."]))

    @function_tool
    async def research(topic: str) -> str:
        """Research a topic."""
        with custom_span("prepare sources"):
            return str((await Runner.run(inner, topic)).final_output)

    outer = Agent(
        name="lead",
        model=ScriptedModel(['call:research:{"topic": "sources"}', "Here it is."]),
        tools=[research],
    )
    with tenant_scope("acme"):
        assert Runner.run_sync(outer, "q").final_output == "Here it is."
    lead = telemetry.span("invoke_agent lead")
    sub = telemetry.span("invoke_agent researcher")
    assert sub.attributes is not None and lead.attributes is not None
    assert sub.attributes[semconv.RUN_PARENT_ID] == lead.attributes[semconv.RUN_ID]
    assert sub.parent is not None
    assert (sub.context.trace_id, sub.parent.span_id) == (
        lead.context.trace_id,
        lead.context.span_id,
    )
    assert telemetry.value(RUNS, {semconv.RESPONSE_EMPTY: False}) == 2


def test_a_failing_tool_marks_its_span_and_the_run_goes_on(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
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
                    run_agent(looping(), max_turns=2)
            else:
                run_agent(answering())

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(work, range(24)))
    for n in range(4):
        assert telemetry.value(RUNS, {semconv.TENANT_ID: f"t{n}"}) == 6
        assert bails_of(telemetry, f"t{n}") == (6 if n % 2 else 0)


def test_the_trace_group_id_is_the_conversation_id(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    run_agent(answering(), run_config=RunConfig(group_id="conversation-7"))
    run = telemetry.span("invoke_agent helper")
    assert run.attributes is not None
    assert run.attributes[semconv.GEN_AI_CONVERSATION_ID] == "conversation-7"


def test_a_max_turns_handler_answering_with_a_canned_message_is_still_a_bail(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    def canned(data: Any) -> str:
        return "Sorry, I could not finish that."

    with tenant_scope("acme"):
        result = run_agent(looping(), max_turns=2, error_handlers={"max_turns": canned})
    assert result.final_output == "Sorry, I could not finish that."
    assert bails_of(telemetry, "acme", "tool_calls_with_no_text") == 1
    assert telemetry.value(STOPS, {semconv.RUN_STOP_REASON: "recursion_limit"}) == 1


def test_without_task_spans_the_trace_is_therun_agent(
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
            run_agent(looping(), max_turns=2, run_config=config)
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "acme"}) == 2
    assert telemetry.value(RUNS, {semconv.RESPONSE_EMPTY: False}) == 1
    assert bails_of(telemetry, "acme", "tool_calls_with_no_text") == 1
    handoff = telemetry.span("handoff second")
    run = telemetry.span("invoke_agent first")
    assert handoff.parent is not None and handoff.parent.span_id == run.context.span_id


class _FailingModel(ScriptedModel):
    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        with generation_span(model=self.model) as span:
            span.set_error({"message": "Error", "data": {}})
            raise RuntimeError("provider down")


def test_a_failing_model_call_is_an_error_run_and_no_bail(
    telemetry: InMemoryTelemetry, processor: SymfonicTracingProcessor
) -> None:
    with tenant_scope("acme"), pytest.raises(RuntimeError):
        run_agent(_FailingModel(["tool"]))
    assert telemetry.value(BAILS) == 0
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "error"}) == 1
    chat = telemetry.span(f"chat {MODEL}")
    assert chat.status.status_code is StatusCode.ERROR
