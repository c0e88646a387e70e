"""The Haystack adapter, on real Haystack Agents with ``MockChatGenerator`` (no network).

``SymfonicTracer().install()`` makes it Haystack's tracer. A capped Agent returns normally with
``exit_reason`` ``max_agent_steps``: a silent bail for its tenant with stop reason
``recursion_limit``; an answer on the last allowed step is not. ``run``, ``run_async`` and both
with a streaming callback give the same verdicts. Runs in the ``haystack`` environment that
``.ci/framework-envs`` builds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("haystack", reason="needs the haystack extra (.ci/framework-envs)")

from haystack import Pipeline
from haystack.components.agents import Agent, State
from haystack.components.generators.chat import MockChatGenerator
from haystack.core.errors import PipelineRuntimeError
from haystack.dataclasses import ChatMessage, StreamingChunk, ToolCall
from haystack.hooks import hook
from haystack.hooks.budget import TokenBudgetHook
from haystack.tools import Tool, tool
from haystack.tools.errors import ToolInvocationError
from haystack.tracing import disable_tracing
from haystack.tracing import tracer as haystack_tracer
from haystack.tracing.logging_tracer import LoggingTracer

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.haystack import SymfonicTracer
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import adapter_checks as checks
from tests.support.bail_support import bails_of
from tests.support.loop_support import assert_no_text
from tests.support.raising_support import assert_error_run

FOREVER = 10**6
USAGE = {"prompt_tokens": 10, "completion_tokens": 5}


class Script:
    """Calls ``lookup`` until ``tool_turns`` results are in, then answers ``answer``."""

    def __init__(self, tool_turns: int = FOREVER, answer: str = "It is sunny.", **meta: Any):
        self.tool_turns, self.answer, self.meta = tool_turns, answer, meta

    def __call__(self, messages: list[ChatMessage]) -> ChatMessage:
        done = sum(1 for m in messages if m.tool_call_result is not None)
        if done < self.tool_turns:
            call = ToolCall(tool_name="lookup", arguments={"q": "weather"}, id=f"call-{done}")
            return ChatMessage.from_assistant(tool_calls=[call], meta={"usage": USAGE})
        return ChatMessage.from_assistant(self.answer, meta={"usage": USAGE, **self.meta})


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}"


@pytest.fixture
def tracer(telemetry: InMemoryTelemetry) -> Iterator[SymfonicTracer]:
    made = SymfonicTracer(handler=telemetry.handler()).install()
    yield made
    made.uninstall()
    assert made.open_runs == 0


@contextlib.contextmanager
def _installed(telemetry: InMemoryTelemetry, **options: Any) -> Iterator[SymfonicTracer]:
    """A tracer whose handler gets ``options``, Haystack's tracer until the block ends."""
    made = SymfonicTracer(handler=telemetry.handler(**options)).install()
    try:
        yield made
    finally:
        made.uninstall()
        disable_tracing()


def _agent(script: Script, tools: list[Any] | None = None, **kwargs: Any) -> Agent:
    generator = MockChatGenerator(response_fn=script)
    return Agent(chat_generator=generator, tools=[lookup] if tools is None else tools, **kwargs)


QUESTION = [ChatMessage.from_user("What is the weather?")]


def run(agent: Agent) -> dict[str, Any]:
    return agent.run(QUESTION)


def run_async(agent: Agent) -> dict[str, Any]:
    return asyncio.run(agent.run_async(QUESTION))


def run_streaming(agent: Agent) -> dict[str, Any]:
    chunks: list[StreamingChunk] = []
    result = agent.run(QUESTION, streaming_callback=chunks.append)
    assert chunks  # the mock streamed its replies
    return result


def run_async_streaming(agent: Agent) -> dict[str, Any]:
    chunks: list[StreamingChunk] = []

    async def collect(chunk: StreamingChunk) -> None:
        chunks.append(chunk)

    result = asyncio.run(agent.run_async(QUESTION, streaming_callback=collect))
    assert chunks
    return result


ENTRY_POINTS = {
    "run": run,
    "run_async": run_async,
    "run_streaming": run_streaming,
    "run_async_streaming": run_async_streaming,
}


entry = checks.entry_fixture(ENTRY_POINTS)


def _assert_capped(telemetry: InMemoryTelemetry, tenant: str) -> None:
    checks.assert_capped_silent_bail(telemetry, tenant)
    checks.assert_capped_run_span(telemetry, "invoke_agent symfonic")


# --- the step cap --------------------------------------------------------------------------------


def test_max_agent_steps_is_a_silent_bail_for_its_tenant_on_every_entry_point(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer, entry: Any
) -> None:
    with tenant_scope("acme"):
        result = entry(_agent(Script(), max_agent_steps=3))
    assert result["exit_reason"] == "max_agent_steps"  # Haystack raised nothing
    _assert_capped(telemetry, "acme")
    assert len([s for s in telemetry.spans() if s.name == "chat mock-model"]) == 3
    assert len([s for s in telemetry.spans() if s.name == "execute_tool lookup"]) == 3


@pytest.mark.parametrize(("steps", "bails"), [(3, 0), (2, 1)])
def test_an_answer_on_the_last_allowed_step_is_no_bail_and_one_step_short_is(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer, entry: Any, steps: int, bails: int
) -> None:
    """Two tool steps then the answer: three steps. A cap of 3 lets it answer."""
    with tenant_scope("acme"):
        result = entry(_agent(Script(tool_turns=2), max_agent_steps=steps))
    assert result["exit_reason"] == ("text" if not bails else "max_agent_steps")
    assert bails_of(telemetry, "acme") == bails
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 1
    stop = "recursion_limit" if bails else "end_turn"
    assert telemetry.value(semconv.STOP_REASONS.name, {semconv.RUN_STOP_REASON: stop}) == 1


@pytest.mark.filterwarnings("ignore::haystack.utils.experimental.ExperimentalWarning")
def test_the_token_budget_hook_is_a_cap_too(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer
) -> None:
    budget = TokenBudgetHook(max_total_tokens=20)  # 15 a call: the third call is never made
    agent = _agent(Script(), hooks={"before_llm": [budget]})
    with tenant_scope("acme"):
        assert run(agent)["exit_reason"] == "token_budget_exceeded"
    _assert_capped(telemetry, "acme")


def test_an_answer_is_a_completed_run_with_our_span_shape(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer, entry: Any
) -> None:
    with tenant_scope("acme"):
        result = entry(_agent(Script(tool_turns=1)))
    assert result["last_message"].text == "It is sunny."
    checks.assert_one_healthy_run(telemetry)
    run_span = telemetry.span("invoke_agent symfonic")
    assert (run_span.attributes or {})[semconv.RUN_STOP_REASON] == "end_turn"
    checks.assert_two_chats_and_the_tool_under(telemetry, run_span, "chat mock-model")
    assert_no_text(telemetry, "It is sunny.")  # no content leaves unless capture is on


@pytest.mark.parametrize(
    ("finish", "stop"), [("length", "max_tokens"), ("content_filter", "refusal")]
)
def test_a_reply_cut_short_is_an_answer_with_its_stop_reason(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer, finish: str, stop: str
) -> None:
    with tenant_scope("acme"):
        result = run(_agent(Script(tool_turns=0, answer="It is sun", finish_reason=finish)))
    assert result["exit_reason"] == finish
    assert bails_of(telemetry, "acme") == 0
    assert telemetry.value(semconv.STOP_REASONS.name, {semconv.RUN_STOP_REASON: stop}) == 1


def test_a_blank_cut_is_a_silent_bail(telemetry: InMemoryTelemetry, tracer: SymfonicTracer) -> None:
    with tenant_scope("acme"):
        run(_agent(Script(tool_turns=0, answer="", finish_reason="length")))
    assert bails_of(telemetry, "acme", "no_content_no_tool_calls") == 1


# --- tenants, pipelines, the tracer installed before ---------------------------------------------


def test_two_tenants_interleaved_keep_their_own_verdicts(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer
) -> None:
    async def one(tenant: str, agent: Agent) -> dict[str, Any]:
        with tenant_scope(tenant):
            return await agent.run_async(QUESTION)

    async def both() -> list[dict[str, Any]]:
        capped = _agent(Script(), max_agent_steps=4)
        healthy = _agent(Script(tool_turns=3), max_agent_steps=5)
        return list(await asyncio.gather(one("acme", capped), one("globex", healthy)))

    capped, healthy = asyncio.run(both())
    assert (capped["exit_reason"], healthy["exit_reason"]) == ("max_agent_steps", "text")
    checks.assert_only_acme_bailed(telemetry, 1)
    checks.assert_each_span_in_its_tenant_s_run(telemetry, "invoke_agent symfonic")


def test_in_a_pipeline_the_run_is_named_after_its_component(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer
) -> None:
    pipeline = Pipeline()
    pipeline.add_component("helper", _agent(Script(tool_turns=1)))
    with tenant_scope("acme"):
        pipeline.run({"helper": {"messages": QUESTION}})
    run_span = telemetry.span("invoke_agent helper")
    assert (run_span.attributes or {})[semconv.TENANT_ID] == "acme"


def test_the_tracer_installed_before_still_gets_every_span(telemetry: InMemoryTelemetry) -> None:
    inner = LoggingTracer()
    haystack_tracer.actual_tracer = inner
    seen: list[str] = []
    original = inner.trace

    @contextlib.contextmanager
    def trace(operation_name: str, tags: Any = None, parent_span: Any = None) -> Iterator[Any]:
        seen.append(operation_name)
        with original(operation_name, tags=tags, parent_span=parent_span) as span:
            yield span

    inner.trace = trace  # type: ignore[method-assign]
    made = SymfonicTracer(handler=telemetry.handler()).install()
    try:
        assert made.inner is inner
        with tenant_scope("acme"):
            run(_agent(Script(tool_turns=1)))
        made.uninstall()
        assert haystack_tracer.actual_tracer is inner  # given back
    finally:
        disable_tracing()
    assert {"haystack.agent.run", "haystack.agent.step.llm", "haystack.agent.step.tool"} <= set(
        seen
    )
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 1


# --- errors: the framework's own exception, unchanged --------------------------------------------


class ModelDown(RuntimeError):
    pass


def test_a_raising_model_reaches_the_caller_unchanged_and_the_run_is_an_error(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer
) -> None:
    raised = ModelDown("provider unavailable")

    def broken(messages: list[ChatMessage]) -> ChatMessage:
        raise raised

    agent = Agent(chat_generator=MockChatGenerator(response_fn=broken), tools=[lookup])
    with tenant_scope("acme"), pytest.raises(ModelDown) as caught:
        run(agent)
    assert caught.value is raised
    assert_error_run(telemetry, "acme", raised, span="invoke_agent symfonic")
    chat = telemetry.span("chat")  # no reply, no model name
    assert (chat.attributes or {})[semconv.ERROR_TYPE] == "ModelDown"


def _failing_tool() -> Tool:
    def fail(q: str) -> str:
        raise ValueError("backend down")

    return Tool(
        name="lookup",
        description="Look something up.",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
        function=fail,
    )


def test_a_failing_tool_is_swallowed_by_default_and_the_run_completes(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer
) -> None:
    with tenant_scope("acme"):
        result = run(_agent(Script(tool_turns=1), tools=[_failing_tool()]))
    assert result["exit_reason"] == "text"
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.RUN_OUTCOME: "completed"}) == 1
    tool_span = telemetry.span("execute_tool lookup")
    assert (tool_span.attributes or {})[semconv.ERROR_TYPE] == "ToolInvocationError"
    assert bails_of(telemetry, "acme") == 0


def test_a_tool_failure_the_agent_raises_reaches_the_caller_and_the_run_is_an_error(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer
) -> None:
    agent = _agent(
        Script(tool_turns=1), tools=[_failing_tool()], raise_on_tool_invocation_failure=True
    )
    with tenant_scope("acme"), pytest.raises(ToolInvocationError):
        run(agent)
    run_span = telemetry.span("invoke_agent symfonic")
    assert (run_span.attributes or {})[semconv.ERROR_TYPE] == "ToolInvocationError"
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0


def test_an_error_inside_a_pipeline_is_the_pipelines_own_and_the_run_an_error(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer
) -> None:
    def broken(messages: list[ChatMessage]) -> ChatMessage:
        raise ModelDown("provider unavailable")

    pipeline = Pipeline()
    pipeline.add_component("helper", Agent(chat_generator=MockChatGenerator(response_fn=broken)))
    with tenant_scope("acme"), pytest.raises(PipelineRuntimeError):
        pipeline.run({"helper": {"messages": QUESTION}})
    run_span = telemetry.span("invoke_agent helper")
    assert (run_span.attributes or {})[semconv.ERROR_TYPE] == "ModelDown"


# --- never hurt the agent; bounded ---------------------------------------------------------------


def test_a_failing_adapter_never_reaches_the_agent_and_is_counted_as_dropped(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks.assert_a_broken_tool_start_is_only_dropped(
        monkeypatch,
        telemetry,
        tracer,
        "SymfonicTracer.content",
        lambda: run(_agent(Script(tool_turns=1)))["last_message"].text,
    )


def test_open_runs_are_bounded_and_the_oldest_is_abandoned(telemetry: InMemoryTelemetry) -> None:
    """Agent spans that never end (Haystack's own tracing API): past the bound, the oldest run
    is closed as abandoned, and its late end is ignored."""
    made = SymfonicTracer(handler=telemetry.handler(), max_open_runs=2).install()
    try:
        with contextlib.ExitStack() as stack:
            for _ in range(3):
                stack.enter_context(haystack_tracer.trace("haystack.agent.run"))
            assert made.open_runs == 2
            abandoned = {semconv.RUN_OUTCOME: "abandoned"}
            assert telemetry.value(semconv.AGENT_RUNS.name, abandoned) == 1
        assert made.open_runs == 0
        assert telemetry.value(semconv.AGENT_RUNS.name) == 3
    finally:
        made.uninstall()
        disable_tracing()


def test_bad_arguments_get_clear_errors() -> None:
    checks.assert_bad_arguments_rejected(SymfonicTracer)


# --- loops ---------------------------------------------------------------------------------------


def test_three_identical_lookups_are_one_looping_run_counted_while_it_runs(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer, entry: Any
) -> None:
    watched, seen_in_call = checks.watched_lookup(telemetry)
    with tenant_scope("acme"):
        result = entry(_agent(Script(tool_turns=3), tools=[tool(watched)]))
    assert result["exit_reason"] == "text"
    checks.assert_three_lookups_looped(
        telemetry, seen_in_call, span="invoke_agent symfonic", repeated_calls=None
    )


def test_two_lookups_are_no_loop_and_the_options_reach_the_handler(
    telemetry: InMemoryTelemetry,
) -> None:
    def once(tool_turns: int, **options: Any) -> None:
        with _installed(telemetry, **options):
            run(_agent(Script(tool_turns=tool_turns)))

    checks.assert_loop_options_reach_the_handler(telemetry, once)


def test_a_cancelled_run_is_cancelled_never_a_bail(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer
) -> None:
    slow, entered = checks.stuck_lookup()
    stuck = Tool(
        name="lookup",
        description="Look something up.",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
        function=lambda q: "never",
        async_function=slow,
    )
    agent = _agent(Script(), tools=[stuck])
    checks.cancel_once_entered(lambda: agent.run_async(QUESTION), entered)
    checks.assert_cancelled_never_a_bail(telemetry)
    stops = {semconv.RUN_STOP_REASON: "interrupted"}
    assert telemetry.value(semconv.STOP_REASONS.name, stops) == 1


def test_a_hook_that_stops_the_run_before_the_model_spoke_is_a_bail(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer
) -> None:
    """The last message is the user's question: no answer, whatever its text."""

    @hook
    def stop_at_once(state: State) -> None:
        state.set("stop_run", "policy")

    with tenant_scope("acme"):
        result = run(_agent(Script(), hooks={"before_llm": [stop_at_once]}))
    assert result["exit_reason"] == "policy"
    assert bails_of(telemetry, "acme", "no_content_no_tool_calls") == 1


def test_a_tool_exit_condition_answers_with_the_tools_result(
    telemetry: InMemoryTelemetry, tracer: SymfonicTracer
) -> None:
    with tenant_scope("acme"):
        result = run(_agent(Script(tool_turns=1), exit_conditions=["lookup"]))
    assert result["exit_reason"] == "lookup"
    assert bails_of(telemetry, "acme") == 0
    where = {semconv.TENANT_ID: "acme", semconv.RESPONSE_EMPTY: False}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1


def test_under_content_capture_the_tool_arguments_and_result_are_on_its_span(
    telemetry: InMemoryTelemetry,
) -> None:
    with _installed(telemetry, capture_content=True), tenant_scope("acme"):
        run(_agent(Script(tool_turns=1)))
    attributes = telemetry.span("execute_tool lookup").attributes or {}
    assert "weather" in str(attributes[semconv.GEN_AI_TOOL_CALL_ARGUMENTS])
    assert "result for weather" in str(attributes[semconv.GEN_AI_TOOL_CALL_RESULT])
