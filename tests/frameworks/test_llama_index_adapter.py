"""The LlamaIndex adapter, on real LlamaIndex agents with a scripted model (no network).

``SymfonicLlamaIndex`` adds span and event handlers to LlamaIndex's instrumentation dispatcher.
``max_iterations`` with ``early_stopping_method="force"`` (the default) raises
``WorkflowRuntimeError``: a silent bail, outcome ``error``. With ``"generate"`` the agent makes
one more model call and returns its text: a silent bail followed by one synthesis fallback,
recovered when the call produced text. An answer on the last turn the budget lets through is an
answer. ``FunctionAgent``, ``ReActAgent`` and ``AgentWorkflow``, awaited or streamed, with a
streaming or a plain model, give the same verdicts.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool
from workflows.errors import WorkflowRuntimeError

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.emit.pricing import ModelPrice
from symfonic_otel.llama_index import SymfonicLlamaIndex
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import run_shape_support as shape
from tests.support.bail_support import assert_raised_step_cap, bails_of
from tests.support.fallback_support import (
    FALLBACKS,
    RUN_SPAN,
    assert_answered,
    assert_forced_answer,
)
from tests.support.llama_index_support import (
    ANSWER,
    BUDGET,
    FORCED,
    KINDS,
    MODES,
    Script,
    agent,
    answering,
    instrumented,
    looping,
    priced_agent,
    run,
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_the_default_force_cap_raises_and_is_a_silent_bail_for_its_tenant(
    telemetry: InMemoryTelemetry, kind: str, mode: str
) -> None:
    workflow, script = agent(kind, looping())
    with instrumented(telemetry), tenant_scope("acme"):
        _, error = run(workflow, mode)
    assert isinstance(error, WorkflowRuntimeError)
    assert script.calls == BUDGET
    assert_raised_step_cap(telemetry, "acme", "WorkflowRuntimeError")
    assert telemetry.value(FALLBACKS) == 0


@pytest.mark.parametrize("streaming", [True, False])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_the_generate_cap_answers_normally_and_is_a_bail_with_one_recovered_fallback(
    telemetry: InMemoryTelemetry, kind: str, mode: str, streaming: bool
) -> None:
    workflow, script = agent(kind, looping(), streaming=streaming)
    with instrumented(telemetry), tenant_scope("acme"):
        result, error = run(workflow, mode, early_stopping_method="generate")
    assert error is None
    assert FORCED in str(result)
    assert script.calls == BUDGET + 1  # the forced answer is one more model call
    assert_forced_answer(telemetry, "acme", recovered=True)


@pytest.mark.parametrize(("forced", "outcome"), [("", "completed"), ("raise", "error")])
def test_a_blank_or_raising_forced_answer_is_a_bail_and_a_fallback_that_did_not_recover(
    telemetry: InMemoryTelemetry, forced: str, outcome: str
) -> None:
    """A blank forced answer completes the run; a forced call that raises ends it ``error``."""
    workflow, _ = agent("function", ["tool"] * BUDGET + [forced])
    with instrumented(telemetry), tenant_scope("acme"):
        _, error = run(workflow, early_stopping_method="generate")
    if outcome == "error":
        assert isinstance(error, RuntimeError)
    else:
        assert error is None
    assert_forced_answer(telemetry, "acme", recovered=False, outcome=outcome)


@pytest.mark.parametrize("method", ["force", "generate"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_an_answer_on_the_last_turn_the_budget_lets_through_is_no_bail(
    telemetry: InMemoryTelemetry, kind: str, mode: str, method: str
) -> None:
    # max_iterations=3: LlamaIndex caps at the 3rd parsed turn, so the 2nd is the last allowed.
    workflow, script = agent(kind, answering(tool_turns=BUDGET - 2))
    with instrumented(telemetry), tenant_scope("acme"):
        result, error = run(workflow, mode, early_stopping_method=method)
    assert error is None and ANSWER in str(result)
    assert script.calls == BUDGET - 1
    assert_answered(telemetry, "acme")


@pytest.mark.parametrize("kind", KINDS)
def test_one_turn_past_the_last_allowed_is_capped(telemetry: InMemoryTelemetry, kind: str) -> None:
    # The answer comes on the 3rd parsed turn: LlamaIndex caps it before reading it.
    workflow, _ = agent(kind, answering(tool_turns=BUDGET - 1))
    with instrumented(telemetry), tenant_scope("acme"):
        _, error = run(workflow)
    assert isinstance(error, WorkflowRuntimeError)
    assert_raised_step_cap(telemetry, "acme", "WorkflowRuntimeError")


def test_a_run_that_answers_is_shaped_like_the_other_adapters(
    telemetry: InMemoryTelemetry,
) -> None:
    workflow, _ = agent("function", answering(tool_turns=1))
    with instrumented(telemetry), tenant_scope("acme"):
        run(workflow)
    assert_answered(telemetry, "acme")
    names = sorted(span.name for span in telemetry.spans())
    assert names.count("execute_tool add") == 1
    assert sum(name.startswith("chat") for name in names) == 2
    shape.assert_every_span_under_the_run(telemetry)


def test_two_tenants_on_one_adapter_each_get_their_own_verdict(
    telemetry: InMemoryTelemetry,
) -> None:
    with instrumented(telemetry):
        with tenant_scope("capped"):
            run(agent("function", looping())[0])
        with tenant_scope("steady"):
            run(agent("function", answering())[0])
    shape.assert_capped_and_steady(telemetry, "error")


def test_the_tenant_is_read_from_llama_index_instrument_tags(
    telemetry: InMemoryTelemetry,
) -> None:
    from llama_index_instrumentation.dispatcher import instrument_tags

    with instrumented(telemetry), instrument_tags({"tenant_id": "tagged"}):
        run(agent("function", looping())[0])
    assert bails_of(telemetry, "tagged") == 1


def test_an_adapter_failure_never_reaches_the_agent_and_is_a_dropped_event(
    telemetry: InMemoryTelemetry,
) -> None:
    adapter = SymfonicLlamaIndex(shape.broken_handler(telemetry)).instrument()
    try:
        result, error = run(agent("function", answering())[0])
    finally:
        adapter.uninstrument()
    assert error is None and ANSWER in str(result)
    shape.assert_dropped(telemetry, "llama_index.span_enter")


def test_uninstrument_removes_both_handlers_and_a_second_instrument_adds_nothing(
    telemetry: InMemoryTelemetry,
) -> None:
    dispatcher = get_dispatcher()
    before = (len(dispatcher.span_handlers), len(dispatcher.event_handlers))
    adapter = SymfonicLlamaIndex(telemetry.handler())
    adapter.instrument().instrument()
    assert (len(dispatcher.span_handlers), len(dispatcher.event_handlers)) == (
        before[0] + 1,
        before[1] + 1,
    )
    adapter.uninstrument()
    assert (len(dispatcher.span_handlers), len(dispatcher.event_handlers)) == before
    run(agent("function", answering())[0])
    assert telemetry.value(semconv.AGENT_RUNS.name) == 0


def test_bad_options_are_refused_by_name() -> None:
    shape.assert_bad_options_refused(SymfonicLlamaIndex)


def test_no_prompt_or_answer_leaves_without_capture(telemetry: InMemoryTelemetry) -> None:
    with instrumented(telemetry), tenant_scope("acme"):
        run(agent("function", looping())[0], early_stopping_method="generate")
    shape.assert_no_task_or(telemetry, FORCED)


def test_two_tenants_running_at_once_in_one_loop_each_get_their_own_verdict(
    telemetry: InMemoryTelemetry,
) -> None:
    async def one(tenant: str, turns: list[str]) -> None:
        with tenant_scope(tenant):
            workflow, _ = agent("function", turns)
            with contextlib.suppress(WorkflowRuntimeError):  # the capped one raises
                await workflow.run(user_msg="Add 1 and 2", max_iterations=BUDGET)

    async def both() -> None:
        await asyncio.gather(one("capped", looping()), one("steady", answering()))

    with instrumented(telemetry):
        asyncio.run(both())
    shape.assert_capped_and_steady(telemetry, "error")


def test_an_agent_run_inside_a_tool_is_a_sub_run_of_the_calling_run(
    telemetry: InMemoryTelemetry,
) -> None:
    inner, _ = agent("function", [ANSWER])
    inner.name = "researcher"

    async def ask(q: str) -> str:
        """Ask the researcher."""
        return str(await inner.run(user_msg=q))

    outer = FunctionAgent(
        name="helper",
        llm=MockFunctionCallingLLM(response_generator=Script(["ask", ANSWER])),
        tools=[FunctionTool.from_defaults(async_fn=ask, name="ask")],
    )
    with instrumented(telemetry), tenant_scope("acme"):
        result, error = run(outer)
    assert error is None and ANSWER in str(result)
    lead = dict(telemetry.span(RUN_SPAN).attributes or {})
    sub = dict(telemetry.span("invoke_agent researcher").attributes or {})
    assert sub[semconv.RUN_PARENT_ID] == lead[semconv.RUN_ID]
    assert semconv.RUN_PARENT_ID not in lead
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 2


def test_with_capture_on_the_message_answer_and_tool_payloads_are_recorded(
    telemetry: InMemoryTelemetry,
) -> None:
    adapter = SymfonicLlamaIndex(telemetry.handler(capture_content=True)).instrument()
    try:
        run(agent("function", answering())[0])
    finally:
        adapter.uninstrument()
    tool = shape.assert_task_answer_and_arguments(telemetry, ANSWER)
    assert "3" in str(tool[semconv.GEN_AI_TOOL_CALL_RESULT])


def test_past_max_runs_the_oldest_open_run_is_ended_as_abandoned_and_counted(
    telemetry: InMemoryTelemetry,
) -> None:
    adapter = SymfonicLlamaIndex(telemetry.handler(), max_runs=1).instrument()

    async def both() -> None:
        await asyncio.gather(
            agent("function", answering())[0].run(user_msg="a", max_iterations=BUDGET),
            agent("function", answering())[0].run(user_msg="b", max_iterations=BUDGET),
        )

    try:
        asyncio.run(both())
    finally:
        adapter.uninstrument()
    shape.assert_oldest_abandoned(telemetry, "llama_index.run_evicted")
    assert adapter.open_runs == 0


def test_the_fallback_cost_is_attributed_to_the_fallback_node(
    telemetry: InMemoryTelemetry,
) -> None:
    price = ModelPrice(input_per_million=1.0, output_per_million=2.0)
    adapter = SymfonicLlamaIndex(telemetry.handler(pricing={"scripted-1": price})).instrument()
    try:
        with tenant_scope("acme"):
            run(priced_agent(looping()), early_stopping_method="generate")
    finally:
        adapter.uninstrument()
    cost = semconv.LLM_COST.name
    fallback = telemetry.value(cost, {semconv.NODE_NAME: semconv.NODE_SYNTHESIZE_FALLBACK})
    assert fallback == pytest.approx((100 * 1.0 + 10 * 2.0) / 1e6)
    assert telemetry.value(cost) == pytest.approx((BUDGET + 1) * fallback)
    assert_forced_answer(telemetry, "acme", recovered=True)
