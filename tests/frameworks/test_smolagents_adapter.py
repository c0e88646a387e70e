"""The smolagents adapter, on real smolagents agents with a scripted ``Model`` (no network).

``max_steps`` ran out: smolagents makes a forced final-answer call, returns its text, records an
``ActionStep`` holding ``AgentMaxStepsError`` and (full result) ``state="max_steps_error"``.
That run is a silent bail (stop reason ``recursion_limit``) followed by one synthesis fallback,
recovered when the call produced text. An answer on the last allowed step is an answer.
``ToolCallingAgent`` and ``CodeAgent``, run, streamed or with the full result, agree.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from opentelemetry.trace import StatusCode
from smolagents.memory import ActionStep
from smolagents.utils import AgentGenerationError

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.emit.pricing import ModelPrice
from symfonic_otel.smolagents import SymfonicSmolagents
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import run_shape_support as shape
from tests.support.fallback_support import RUN_SPAN, assert_answered, assert_forced_answer
from tests.support.smolagents_support import (
    ANSWER,
    BUDGET,
    FORCED,
    KINDS,
    MODES,
    agent,
    answering,
    looping,
    run,
)


def _adapter(telemetry: InMemoryTelemetry, **handler: Any) -> SymfonicSmolagents:
    return SymfonicSmolagents(telemetry.handler(**handler))


def _watched(
    telemetry: InMemoryTelemetry, kind: str, turns: list[str], **handler: Any
) -> tuple[Any, Any, SymfonicSmolagents]:
    """An agent of ``kind`` playing ``turns``, instrumented by an adapter whose handler gets
    ``handler``: the agent, its scripted model and the adapter."""
    adapter = _adapter(telemetry, **handler)
    built, model = agent(kind, turns, adapter.step_callbacks())
    return built, model, adapter


def _output(result: Any) -> Any:
    return getattr(result, "output", result)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_max_steps_is_a_bail_with_one_recovered_fallback_and_the_run_returns_normally(
    telemetry: InMemoryTelemetry, kind: str, mode: str
) -> None:
    built, model, adapter = _watched(telemetry, kind, looping())
    with tenant_scope("acme"):
        result = run(built, mode)
    assert _output(result) == FORCED
    assert model.calls == BUDGET + 1
    if mode == "full_result":
        assert result.state == "max_steps_error"
    assert_forced_answer(telemetry, "acme", recovered=True)
    assert adapter.open_runs == 0


@pytest.mark.parametrize("forced", [None, ""])
def test_a_forced_answer_that_failed_or_came_back_blank_did_not_recover(
    telemetry: InMemoryTelemetry, forced: str | None
) -> None:
    adapter = _adapter(telemetry)
    built, _ = agent("tool_calling", looping(), adapter.step_callbacks(), forced=forced)
    with tenant_scope("acme"):
        result = run(built, "full_result")
    assert result.state == "max_steps_error"
    assert_forced_answer(telemetry, "acme", recovered=False)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_an_answer_on_the_last_allowed_step_is_no_bail(
    telemetry: InMemoryTelemetry, kind: str, mode: str
) -> None:
    built, model, _ = _watched(telemetry, kind, answering(tool_turns=BUDGET - 1))
    with tenant_scope("acme"):
        result = run(built, mode)
    assert _output(result) == ANSWER
    assert model.calls == BUDGET
    if mode == "full_result":
        assert result.state == "success"
    assert_answered(telemetry, "acme")


def test_the_fallback_cost_is_attributed_to_the_fallback_node(
    telemetry: InMemoryTelemetry,
) -> None:
    price = ModelPrice(input_per_million=1.0, output_per_million=2.0)
    built, _, _ = _watched(telemetry, "tool_calling", looping(), pricing={"scripted-1": price})
    with tenant_scope("acme"):
        run(built)
    cost = semconv.LLM_COST.name
    fallback = telemetry.value(cost, {semconv.NODE_NAME: semconv.NODE_SYNTHESIZE_FALLBACK})
    assert fallback == pytest.approx((100 * 1.0 + 10 * 2.0) / 1e6)
    assert telemetry.value(cost) == pytest.approx(4 * fallback)


def test_a_run_that_answers_is_shaped_like_the_other_adapters(
    telemetry: InMemoryTelemetry,
) -> None:
    adapter = SymfonicSmolagents(telemetry.handler())
    built, _ = agent("tool_calling", answering(tool_turns=1), None)
    adapter.attach(built)
    with tenant_scope("acme"):
        run(built)
    assert_answered(telemetry, "acme")
    names = [span.name for span in telemetry.spans()]
    assert names.count("execute_tool add") == 1
    assert names.count("chat scripted-1") == 2
    shape.assert_every_span_under_the_run(telemetry)


def test_two_tenants_on_one_adapter_each_get_their_own_verdict(
    telemetry: InMemoryTelemetry,
) -> None:
    capped, _, adapter = _watched(telemetry, "tool_calling", looping())
    steady, _ = agent("code", answering(), adapter.step_callbacks())
    with tenant_scope("capped"):
        run(capped)
    with tenant_scope("steady"):
        run(steady)
    shape.assert_capped_and_steady(telemetry, "completed")


def test_the_same_agent_run_twice_is_two_runs(telemetry: InMemoryTelemetry) -> None:
    built, model, _ = _watched(telemetry, "tool_calling", answering())
    run(built)
    model.calls = 0
    run(built)
    assert telemetry.value(semconv.AGENT_RUNS.name) == 2


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_a_run_whose_model_raised_ends_as_error_and_the_exception_reaches_the_caller(
    telemetry: InMemoryTelemetry, kind: str, mode: str
) -> None:
    built, model, adapter = _watched(telemetry, kind, ["tool", "raise"])
    with pytest.raises(AgentGenerationError) as raised:  # smolagents' own, unchanged
        run(built, mode)
    assert isinstance(raised.value.__cause__, RuntimeError)
    assert adapter.open_runs == 0
    errors = {semconv.RUN_OUTCOME: "error"}
    assert telemetry.value(semconv.AGENT_RUNS.name, errors) == 1
    assert telemetry.value(semconv.AGENT_RUNS.name) == 1
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0
    span = telemetry.span(RUN_SPAN)
    assert dict(span.attributes or {})[semconv.ERROR_TYPE] == "AgentGenerationError"
    assert span.status.status_code is StatusCode.ERROR
    model.turns, model.calls = answering(), 0
    run(built, mode)  # the agent's next run is a run of its own
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.RUN_OUTCOME: "completed"}) == 1
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.RUN_OUTCOME: "abandoned"}) == 0


def test_a_run_interrupted_in_its_model_call_ends_cancelled(telemetry: InMemoryTelemetry) -> None:
    built, model, adapter = _watched(telemetry, "tool_calling", answering())
    answer = model.generate

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        if model.calls == 1:  # the second call: the user pressed Ctrl-C
            raise KeyboardInterrupt
        return answer(*args, **kwargs)

    model.generate = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        run(built)
    assert adapter.open_runs == 0
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.RUN_OUTCOME: "cancelled"}) == 1
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0


def test_an_adapter_failure_never_reaches_the_agent_and_is_a_dropped_event(
    telemetry: InMemoryTelemetry,
) -> None:
    adapter = SymfonicSmolagents(shape.broken_handler(telemetry))
    built, _ = agent("tool_calling", answering(), adapter.step_callbacks())
    assert run(built) == ANSWER
    shape.assert_dropped(telemetry, "smolagents.step")


def test_bad_options_are_refused_by_name() -> None:
    shape.assert_bad_options_refused(SymfonicSmolagents)


def test_no_task_or_answer_leaves_without_capture(telemetry: InMemoryTelemetry) -> None:
    built, _, _ = _watched(telemetry, "tool_calling", looping())
    run(built)
    shape.assert_no_task_or(telemetry, FORCED)


def test_with_capture_on_the_task_answer_and_tool_arguments_are_recorded(
    telemetry: InMemoryTelemetry,
) -> None:
    built, _, _ = _watched(telemetry, "tool_calling", answering(), capture_content=True)
    run(built)
    shape.assert_task_answer_and_arguments(telemetry, ANSWER)


def test_past_max_runs_the_oldest_open_run_is_ended_as_abandoned_and_counted(
    telemetry: InMemoryTelemetry,
) -> None:
    adapter = SymfonicSmolagents(telemetry.handler(), max_runs=1)
    left, _ = agent("tool_calling", looping(), adapter.step_callbacks())
    stream = left.run("Add 1 and 2", stream=True)  # left after its first step, still open
    assert any(isinstance(item, ActionStep) for item in stream)
    assert adapter.open_runs == 1
    steady, _ = agent("tool_calling", answering(), adapter.step_callbacks())
    run(steady)
    shape.assert_oldest_abandoned(telemetry, "smolagents.run_evicted")
    assert adapter.open_runs == 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_tool_that_raised_has_its_execute_tool_span_marked_with_error_type(
    telemetry: InMemoryTelemetry, kind: str
) -> None:
    built, _, _ = _watched(telemetry, kind, ["broken", ANSWER], capture_content=True)
    with tenant_scope("acme"):
        assert run(built) == ANSWER
    failed = built.memory.steps[1]
    assert failed.error is not None
    if kind == "tool_calling":  # smolagents keeps the failed call on the model output only
        assert failed.tool_calls is None
        assert failed.model_output_message.tool_calls[0].function.name == "lookup"
    tools = [s for s in telemetry.spans() if s.name.startswith("execute_tool")]
    marked = [s for s in tools if (s.attributes or {}).get(semconv.ERROR_TYPE) is not None]
    assert len(marked) == 1, [s.name for s in tools]
    span = marked[0]
    attributes = dict(span.attributes or {})
    assert attributes[semconv.ERROR_TYPE] == semconv.TOOL_ERROR_TYPE
    if kind == "tool_calling":
        assert span.name == "execute_tool lookup"
        assert attributes[semconv.GEN_AI_TOOL_CALL_ID] == "c0"
        assert '"key": "k"' in str(attributes[semconv.GEN_AI_TOOL_CALL_ARGUMENTS])
    else:  # a code step is one python_interpreter call, recorded before the code ran
        assert span.name == "execute_tool python_interpreter"
    root = telemetry.span(RUN_SPAN)
    assert span.parent is not None and span.parent.span_id == root.context.span_id
    assert_answered(telemetry, "acme")


def test_tool_calls_that_returned_are_not_marked_failed(telemetry: InMemoryTelemetry) -> None:
    built, _, _ = _watched(telemetry, "tool_calling", ["tool", ANSWER])
    run(built)
    span = telemetry.span("execute_tool add")
    assert semconv.ERROR_TYPE not in (span.attributes or {})


def test_spans_are_timed_by_the_steps_wall_clock_times(telemetry: InMemoryTelemetry) -> None:
    """smolagents times each step with ``time.time()`` seconds: the run starts when its first
    step did, each model call spans its step, and no step's time is refused as malformed."""
    built, _, _ = _watched(telemetry, "tool_calling", answering(tool_turns=1))
    before = time.time_ns()
    run(built)
    after = time.time_ns()
    (agent_span,) = [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
    chats = [s for s in telemetry.spans() if s.name.startswith("chat")]
    assert len(chats) == 2
    assert agent_span.start_time == chats[0].start_time
    for span in [agent_span, *chats]:
        assert span.start_time is not None and span.end_time is not None
        assert before <= span.start_time < span.end_time <= after, span.name
    assert telemetry.value(semconv.DROPPED_EVENTS.name) == 0
