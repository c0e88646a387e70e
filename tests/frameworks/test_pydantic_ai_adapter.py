"""The Pydantic AI adapter, on real Pydantic AI agents with scripted models (no network).

``SymfonicCapability`` is given to ``Agent(capabilities=[...])``. A model that calls tools until
``UsageLimits(request_limit=...)`` stops it is a silent bail for its tenant (stop reason
``recursion_limit``), one that answers is not; spent output retries (the model never gave an
answer the agent could accept) are a bail too; the spans are shaped as the other adapters'.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel
from pydantic_ai import Agent, DeferredToolRequests, UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.exceptions import ContentFilterError
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import UsageLimits

from symfonic_otel import OTelCallbackHandler, semconv, tenant_scope
from symfonic_otel.pydantic_ai import SymfonicCapability
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.bail_support import assert_raised_step_cap, bails_of

BAILS = "symfonic.react.silent_bails"
RUNS = "symfonic.agent.runs"
STOPS = "symfonic.agent.stop_reasons"


def _requests(messages: list[ModelMessage]) -> int:
    return sum(1 for m in messages if m.kind == "request")


def looping(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart("lookup", {"q": "weather"})])


def answering_after(tool_turns: int, text: str = "It is sunny.") -> Any:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if _requests(messages) <= tool_turns:
            return ModelResponse(parts=[ToolCallPart("lookup", {"q": "weather"})])
        return ModelResponse(parts=[TextPart(text)])

    return model


def blank(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("")])


def _agent(telemetry: InMemoryTelemetry, function: Any, **kwargs: Any) -> Agent[None, Any]:
    capture = kwargs.pop("capture_content", None)
    capability = SymfonicCapability(handler=telemetry.handler(capture_content=capture))
    agent: Agent[None, Any] = Agent(
        FunctionModel(function, model_name="scripted"),
        name="helper",
        capabilities=[capability],
        **kwargs,
    )

    @agent.tool_plain
    def lookup(q: str) -> str:
        """Look something up."""
        return f"result for {q}"

    return agent


def test_a_chat_span_lasts_as_long_as_its_model_took(telemetry: InMemoryTelemetry) -> None:
    # The request's start is taken before the model answers: a model that takes 50 ms gives a
    # chat span (and a call duration) of at least that, not a span that starts at its answer.
    def slow(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        time.sleep(0.05)
        return ModelResponse(parts=[TextPart("It is sunny.")])

    agent = _agent(telemetry, slow)
    agent.run_sync("What is the weather?")
    (chat,) = [s for s in telemetry.spans() if s.name == "chat scripted"]
    assert chat.start_time is not None and chat.end_time is not None
    assert chat.end_time - chat.start_time >= 50_000_000


# --- the step cap: UsageLimitExceeded -------------------------------------------------------------


def test_request_limit_is_a_silent_bail_for_its_tenant_with_stop_reason_recursion_limit(
    telemetry: InMemoryTelemetry,
) -> None:
    agent = _agent(telemetry, looping)
    with tenant_scope("acme"), pytest.raises(UsageLimitExceeded):
        agent.run_sync("What is the weather?", usage_limits=UsageLimits(request_limit=3))

    assert_raised_step_cap(telemetry, "acme", "UsageLimitExceeded")
    chats = [s for s in telemetry.spans() if s.name == "chat scripted"]
    tools = [s for s in telemetry.spans() if s.name == "execute_tool lookup"]
    assert len(chats) == 3 and len(tools) == 3


@pytest.mark.parametrize(("request_limit", "bails"), [(3, 0), (2, 1)])
def test_request_limit_boundary_an_answer_on_the_last_allowed_request_is_no_bail(
    telemetry: InMemoryTelemetry, request_limit: int, bails: int
) -> None:
    """Two tool turns then the answer: three requests. A limit of 3 lets it answer, 2 does not."""
    agent = _agent(telemetry, answering_after(2))
    limits = UsageLimits(request_limit=request_limit)
    with tenant_scope("acme"):
        if bails:
            with pytest.raises(UsageLimitExceeded):
                agent.run_sync("q", usage_limits=limits)
        else:
            assert agent.run_sync("q", usage_limits=limits).output == "It is sunny."
    assert bails_of(telemetry, "acme") == bails
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "acme"}) == 1


# --- answers --------------------------------------------------------------------------------------


def test_an_answer_counts_as_a_run_and_not_as_a_bail_with_our_span_shape(
    telemetry: InMemoryTelemetry,
) -> None:
    agent = _agent(telemetry, answering_after(1))
    with tenant_scope("acme"):
        assert agent.run_sync("What is the weather?").output == "It is sunny."

    assert telemetry.value(BAILS) == 0
    where = {
        semconv.TENANT_ID: "acme",
        semconv.RUN_OUTCOME: "completed",
        semconv.RESPONSE_EMPTY: False,
    }
    assert telemetry.value(RUNS, where) == 1
    assert telemetry.value(STOPS, {semconv.RUN_STOP_REASON: "end_turn"}) == 1
    run = telemetry.span("invoke_agent helper")
    assert run.kind is SpanKind.INTERNAL and run.parent is None
    chats = [s for s in telemetry.spans() if s.name == "chat scripted"]
    assert len(chats) == 2
    for chat in chats:
        assert chat.kind is SpanKind.CLIENT
        assert chat.parent is not None and chat.parent.span_id == run.context.span_id
        assert chat.attributes is not None
        assert chat.attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] > 0
    tool = telemetry.span("execute_tool lookup")
    assert tool.parent is not None and tool.parent.span_id == run.context.span_id
    assert tool.attributes is not None and tool.attributes[semconv.GEN_AI_TOOL_CALL_ID]


async def test_the_async_run_and_iter_paths_are_recorded_alike(
    telemetry: InMemoryTelemetry,
) -> None:
    capability = SymfonicCapability(handler=telemetry.handler())
    agent: Agent[None, str] = Agent(TestModel(), name="tester", capabilities=[capability])
    with tenant_scope("acme"):
        assert (await agent.run("hello")).output
        async with agent.iter("hello again") as run:
            async for _ in run:
                pass
        assert run.result is not None and run.result.output
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "acme", semconv.RESPONSE_EMPTY: False}) == 2
    assert telemetry.value(BAILS) == 0


# --- spent retries --------------------------------------------------------------------------------


def test_spent_output_retries_on_blank_answers_are_a_silent_bail(
    telemetry: InMemoryTelemetry,
) -> None:
    agent = _agent(telemetry, blank)
    with tenant_scope("acme"), pytest.raises(UnexpectedModelBehavior):
        agent.run_sync("q")
    assert bails_of(telemetry, "acme", "no_content_no_tool_calls") == 1
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "error"}) == 1
    run = telemetry.span("invoke_agent helper")
    assert run.attributes is not None
    assert run.attributes[semconv.ERROR_TYPE] == "UnexpectedModelBehavior"


class Forecast(BaseModel):
    degrees: int


def test_spent_retries_on_an_invalid_structured_answer_are_a_silent_bail(
    telemetry: InMemoryTelemetry,
) -> None:
    def invalid(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        output_tool = info.output_tools[0].name
        return ModelResponse(parts=[ToolCallPart(output_tool, {"degrees": "warm"})])

    agent = _agent(telemetry, invalid, output_type=Forecast)
    with tenant_scope("acme"), pytest.raises(UnexpectedModelBehavior):
        agent.run_sync("q")
    assert bails_of(telemetry, "acme", "tool_calls_with_no_text") == 1


def test_a_content_filter_is_an_error_not_a_silent_bail(telemetry: InMemoryTelemetry) -> None:
    def filtered(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ContentFilterError("filtered")

    agent = _agent(telemetry, filtered)
    with tenant_scope("acme"), pytest.raises(ContentFilterError):
        agent.run_sync("q")
    assert telemetry.value(BAILS) == 0
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "error"}) == 1


# --- tenants, tools, privacy, guarantees ----------------------------------------------------------


def test_the_tenant_is_the_scope_else_the_run_metadata(telemetry: InMemoryTelemetry) -> None:
    agent = _agent(telemetry, looping)
    limits = UsageLimits(request_limit=1)
    with pytest.raises(UsageLimitExceeded):
        agent.run_sync("q", usage_limits=limits, metadata={"tenant_id": "globex"})
    with tenant_scope("acme"), pytest.raises(UsageLimitExceeded):
        agent.run_sync("q", usage_limits=limits, metadata={"tenant_id": "globex"})
    assert bails_of(telemetry, "globex") == 1 and bails_of(telemetry, "acme") == 1


def _run_with_a_failing_lookup(telemetry: InMemoryTelemetry, message: str) -> None:
    """A run whose ``lookup`` tool raises ``ValueError(message)``, which reaches the caller."""
    capability = SymfonicCapability(handler=telemetry.handler())
    agent: Agent[None, str] = Agent(
        FunctionModel(answering_after(1), model_name="scripted"), capabilities=[capability]
    )

    @agent.tool_plain
    def lookup(q: str) -> str:
        raise ValueError(message)

    with pytest.raises(ValueError):
        agent.run_sync("q")


def test_a_failing_tool_marks_its_span_and_the_run_goes_on(telemetry: InMemoryTelemetry) -> None:
    _run_with_a_failing_lookup(telemetry, "backend down")
    tool = telemetry.span("execute_tool lookup")
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes is not None and tool.attributes[semconv.ERROR_TYPE] == "ValueError"
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "error"}) == 1
    assert telemetry.value(BAILS) == 0


def _texts(telemetry: InMemoryTelemetry) -> str:
    return repr([(s.attributes, [e.attributes for e in s.events]) for s in telemetry.spans()])


def test_no_prompt_answer_or_tool_payload_leaves_without_capture(
    telemetry: InMemoryTelemetry,
) -> None:
    _agent(telemetry, answering_after(1, "The secret is 42.")).run_sync("Tell me the secret")
    seen = _texts(telemetry)
    assert "secret" not in seen and "weather" not in seen


def test_with_capture_on_the_prompt_answer_and_tool_payloads_are_recorded(
    telemetry: InMemoryTelemetry,
) -> None:
    agent = _agent(telemetry, answering_after(1, "The secret is 42."), capture_content=True)
    agent.run_sync("Tell me the secret")
    seen = _texts(telemetry)
    assert "Tell me the secret" in seen and "The secret is 42." in seen
    tool = telemetry.span("execute_tool lookup")
    assert tool.attributes is not None
    assert "weather" in str(tool.attributes[semconv.GEN_AI_TOOL_CALL_ARGUMENTS])
    assert tool.attributes[semconv.GEN_AI_TOOL_CALL_RESULT] == "result for weather"


class _Broken(OTelCallbackHandler):
    def agent_start(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("telemetry bug")


def test_a_telemetry_failure_never_reaches_the_agent(telemetry: InMemoryTelemetry) -> None:
    capability = SymfonicCapability(
        handler=telemetry.track(
            _Broken(
                tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
            )
        )
    )
    agent: Agent[None, str] = Agent(TestModel(), capabilities=[capability])
    assert agent.run_sync("hello").output
    assert capability.internal_failures() == {"pydantic_ai.run_start": 1}


def test_a_handler_that_is_not_ours_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="SymfonicCapability: handler must be"):
        SymfonicCapability(handler=object())  # type: ignore[arg-type]


async def test_the_streamed_path_bails_and_answers_alike(telemetry: InMemoryTelemetry) -> None:
    async def streamed(messages: list[ModelMessage], info: AgentInfo) -> Any:
        if _requests(messages) <= 1:
            yield {0: DeltaToolCall(name="lookup", json_args='{"q": "weather"}')}
        else:
            yield "It is sunny."

    async def streamed_loop(messages: list[ModelMessage], info: AgentInfo) -> Any:
        yield {0: DeltaToolCall(name="lookup", json_args='{"q": "weather"}')}

    agent = _agent(telemetry, looping)
    with tenant_scope("acme"):
        answering = FunctionModel(stream_function=streamed, model_name="scripted")
        async with agent.run_stream("q", model=answering) as result:
            assert await result.get_output() == "It is sunny."
        loop = FunctionModel(stream_function=streamed_loop, model_name="scripted")
        limits = UsageLimits(request_limit=2)
        with pytest.raises(UsageLimitExceeded):
            async with agent.run_stream("q", model=loop, usage_limits=limits) as result:
                await result.get_output()
    assert bails_of(telemetry, "acme", "tool_calls_with_no_text") == 1
    assert telemetry.value(RUNS, {semconv.RESPONSE_EMPTY: False}) == 1


def test_an_agent_run_inside_a_tool_is_a_sub_run_under_the_tool_span(
    telemetry: InMemoryTelemetry,
) -> None:
    capability = SymfonicCapability(handler=telemetry.handler())
    inner: Agent[None, str] = Agent(TestModel(), name="researcher", capabilities=[capability])
    outer: Agent[None, str] = Agent(
        FunctionModel(answering_after(1), model_name="scripted"),
        name="lead",
        capabilities=[capability],
    )

    @outer.tool_plain
    async def lookup(q: str) -> str:
        return (await inner.run(q)).output

    with tenant_scope("acme"):
        assert outer.run_sync("q").output == "It is sunny."
    lead = telemetry.span("invoke_agent lead")
    sub = telemetry.span("invoke_agent researcher")
    tool = telemetry.span("execute_tool lookup")
    assert sub.parent is not None and sub.parent.span_id == tool.context.span_id
    assert sub.attributes is not None and lead.attributes is not None
    assert sub.attributes[semconv.RUN_PARENT_ID] == lead.attributes[semconv.RUN_ID]
    assert semconv.RUN_PARENT_ID not in lead.attributes
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "acme", semconv.RESPONSE_EMPTY: False}) == 2


def test_a_failing_tool_records_no_exception_message(telemetry: InMemoryTelemetry) -> None:
    _run_with_a_failing_lookup(telemetry, "the user's secret account number")
    assert "secret" not in _texts(telemetry)


def test_a_run_waiting_on_a_tool_approval_is_paused_not_an_answer_or_a_bail(
    telemetry: InMemoryTelemetry,
) -> None:
    capability = SymfonicCapability(handler=telemetry.handler())
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(looping, model_name="scripted"),
        name="helper",
        capabilities=[capability],
        output_type=[str, DeferredToolRequests],
    )

    @agent.tool_plain(requires_approval=True)
    def lookup(q: str) -> str:
        return "never runs without approval"

    with tenant_scope("acme"):
        output = agent.run_sync("q").output
    assert isinstance(output, DeferredToolRequests) and output.approvals
    assert telemetry.value(BAILS) == 0
    run = telemetry.span("invoke_agent helper")
    assert run.attributes is not None
    assert run.attributes[semconv.RUN_PAUSED] is True
    assert run.attributes[semconv.RUN_STOP_REASON] == "interrupted"
    assert semconv.RESPONSE_EMPTY not in run.attributes
