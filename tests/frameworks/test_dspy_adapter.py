"""The DSPy adapter, on real DSPy programs with ``DummyLM`` (DSPy's own scripted LM, no network).

``SymfonicCallback`` is one of ``dspy.context(callbacks=[...])``. ``dspy.ReAct`` runs at most
``max_iters`` react steps, then its ``extract`` step writes the answer anyway: after a loop that
ran out (``max_iters`` steps, none of them ``finish``) that is a forced answer, a silent bail
with stop reason ``recursion_limit`` and a ``react_synthesize_fallback`` call, recovered when it
produced an answer. ``extract`` also runs on every healthy run: there it is no fallback.
``program(...)``, ``program.acall(...)`` and ``dspy.streamify(program)`` give the same
verdicts. Runs in the ``dspy`` environment that ``.ci/framework-envs`` builds.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("dspy", reason="needs the dspy extra (.ci/framework-envs)")

import dspy
from dspy.utils.dummies import DummyLM
from dspy.utils.exceptions import LMUnexpectedError

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.dspy import SymfonicCallback
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import adapter_checks as checks
from tests.support.bail_support import bails_of
from tests.support.loop_support import assert_no_text
from tests.support.raising_support import assert_error_run

STEP = {
    "next_thought": "look it up",
    "next_tool_name": "lookup",
    "next_tool_args": {"q": "weather"},
}
FINISH = {"next_thought": "done", "next_tool_name": "finish", "next_tool_args": {}}
ANSWER = {"reasoning": "from the lookup", "answer": "It is sunny."}
BLANK = {"reasoning": "nothing found", "answer": ""}


def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}"


def _react(script: list[dict[str, Any]], max_iters: int = 5, tools: Any = None) -> dspy.ReAct:
    program = dspy.ReAct("question -> answer", tools=tools or [lookup], max_iters=max_iters)
    program.set_lm(DummyLM(script))
    return program


def healthy(steps: int) -> list[dict[str, Any]]:
    """``steps`` lookups, ``finish``, the answer."""
    return [STEP] * steps + [FINISH, ANSWER]


def capped(steps: int, answer: dict[str, Any] = ANSWER) -> list[dict[str, Any]]:
    """Lookups until ``max_iters`` = ``steps`` runs out, then the forced answer."""
    return [STEP] * steps + [answer]


@pytest.fixture
def callback(telemetry: InMemoryTelemetry) -> Iterator[SymfonicCallback]:
    made = SymfonicCallback(handler=telemetry.handler())
    with dspy.context(callbacks=[made]):
        yield made
    assert made.open_runs == 0


def call(program: dspy.Module) -> Any:
    return program(question="What is the weather?")


def acall(program: dspy.Module) -> Any:
    return asyncio.run(program.acall(question="What is the weather?"))


def streamify(program: dspy.Module) -> Any:
    async def consume() -> Any:
        final = None
        async for item in dspy.streamify(program)(question="What is the weather?"):
            if isinstance(item, dspy.Prediction):
                final = item
        return final

    return asyncio.run(consume())


ENTRY_POINTS = {"call": call, "acall": acall, "streamify": streamify}


entry = checks.entry_fixture(ENTRY_POINTS)


def _fallbacks(telemetry: InMemoryTelemetry, recovered: bool | None = None) -> float:
    where = {} if recovered is None else {semconv.SYNTHESIS_RECOVERED: recovered}
    return telemetry.value(semconv.SYNTHESIS_FALLBACKS.name, where)


def _assert_capped(telemetry: InMemoryTelemetry, tenant: str) -> None:
    assert bails_of(telemetry, tenant, "tool_calls_with_no_text") == 1
    assert telemetry.value(semconv.SILENT_BAILS.name) == 1
    stops = {semconv.RUN_STOP_REASON: "recursion_limit", semconv.TENANT_ID: tenant}
    assert telemetry.value(semconv.STOP_REASONS.name, stops) == 1
    run = telemetry.span("invoke_agent ReAct")
    assert (run.attributes or {})[semconv.RUN_STOP_REASON] == "recursion_limit"
    (forced,) = [
        s
        for s in telemetry.spans()
        if (s.attributes or {}).get(semconv.NODE_NAME) == semconv.NODE_SYNTHESIZE_FALLBACK
    ]
    assert forced.parent is not None and forced.parent.span_id == run.context.span_id


# --- max_iters: the forced answer ----------------------------------------------------------------


def test_a_loop_that_ran_out_is_a_bail_with_a_recovered_forced_answer_on_every_entry_point(
    telemetry: InMemoryTelemetry, callback: SymfonicCallback, entry: Any
) -> None:
    with tenant_scope("acme"):
        prediction = entry(_react(capped(3), max_iters=3))
    assert prediction.answer == "It is sunny."  # DSPy raised nothing and answered
    _assert_capped(telemetry, "acme")
    assert _fallbacks(telemetry, recovered=True) == 1
    where = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "completed"}
    assert telemetry.value(semconv.AGENT_RUNS.name, {**where, semconv.RESPONSE_EMPTY: False}) == 1
    assert len([s for s in telemetry.spans() if s.name == "execute_tool lookup"]) == 3


def test_a_forced_answer_that_came_out_blank_is_unrecovered(
    telemetry: InMemoryTelemetry, callback: SymfonicCallback, entry: Any
) -> None:
    with tenant_scope("acme"):
        prediction = entry(_react(capped(2, BLANK), max_iters=2))
    assert prediction.answer == ""
    _assert_capped(telemetry, "acme")
    assert _fallbacks(telemetry, recovered=False) == 1
    assert _fallbacks(telemetry, recovered=True) == 0
    where = {semconv.TENANT_ID: "acme", semconv.RESPONSE_EMPTY: True}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1


@pytest.mark.parametrize(("max_iters", "bails"), [(3, 0), (2, 1)])
def test_finish_on_the_last_allowed_step_is_no_bail_and_one_step_short_is(
    telemetry: InMemoryTelemetry,
    callback: SymfonicCallback,
    entry: Any,
    max_iters: int,
    bails: int,
) -> None:
    """Two lookups then ``finish``: three react steps. ``max_iters=3`` lets it finish."""
    with tenant_scope("acme"):
        entry(_react(healthy(2) if not bails else capped(2), max_iters=max_iters))
    assert bails_of(telemetry, "acme") == bails
    assert _fallbacks(telemetry) == bails
    stop = "recursion_limit" if bails else "end_turn"
    assert telemetry.value(semconv.STOP_REASONS.name, {semconv.RUN_STOP_REASON: stop}) == 1


def test_a_per_call_max_iters_is_the_cap_read(
    telemetry: InMemoryTelemetry, callback: SymfonicCallback
) -> None:
    with tenant_scope("acme"):
        _react(capped(1), max_iters=20)(question="q", max_iters=1)
    _assert_capped(telemetry, "acme")


def test_a_healthy_run_extracts_too_and_that_is_no_fallback(
    telemetry: InMemoryTelemetry, callback: SymfonicCallback, entry: Any
) -> None:
    with tenant_scope("acme"):
        prediction = entry(_react(healthy(1)))
    assert prediction.answer == "It is sunny."
    checks.assert_one_healthy_run(telemetry)
    assert _fallbacks(telemetry) == 0
    run = telemetry.span("invoke_agent ReAct")
    assert (run.attributes or {})[semconv.RUN_STOP_REASON] == "end_turn"
    chats = [s for s in telemetry.spans() if s.name == "chat dummy"]
    assert len(chats) == 3  # lookup, finish, extract
    assert all(c.parent is not None and c.parent.span_id == run.context.span_id for c in chats)
    assert not [s for s in telemetry.spans() if s.name == "execute_tool finish"]
    assert_no_text(telemetry, "It is sunny.")


def test_a_blank_answer_of_a_healthy_loop_is_a_bail_without_fallback(
    telemetry: InMemoryTelemetry, callback: SymfonicCallback
) -> None:
    with tenant_scope("acme"):
        call(_react([FINISH, BLANK]))
    assert bails_of(telemetry, "acme", "no_content_no_tool_calls") == 1
    assert _fallbacks(telemetry) == 0


def test_a_program_around_react_is_the_run(
    telemetry: InMemoryTelemetry, callback: SymfonicCallback
) -> None:
    class Helper(dspy.Module):
        def __init__(self) -> None:
            super().__init__()
            self.agent = _react(capped(2), max_iters=2)

        def forward(self, question: str) -> dspy.Prediction:
            return self.agent(question=question)

    with tenant_scope("acme"):
        Helper()(question="q")
    assert bails_of(telemetry, "acme") == 1
    run = telemetry.span("invoke_agent Helper")
    assert (run.attributes or {})[semconv.RUN_STOP_REASON] == "recursion_limit"
    assert len([s for s in telemetry.spans() if "invoke_agent" in s.name]) == 1


# --- tenants -------------------------------------------------------------------------------------


def test_two_tenants_interleaved_keep_their_own_verdicts(
    telemetry: InMemoryTelemetry, callback: SymfonicCallback
) -> None:
    async def slow_lookup(q: str) -> str:
        """Look something up."""
        await asyncio.sleep(0.001)  # the other tenant's run moves on meanwhile
        return f"result for {q}"

    async def one(tenant: str, program: dspy.Module) -> Any:
        with tenant_scope(tenant):
            return await program.acall(question="q")

    async def both() -> list[Any]:
        tool = dspy.Tool(slow_lookup, name="lookup")
        bailing = _react(capped(3), max_iters=3, tools=[tool])
        steady = _react(healthy(3), max_iters=5, tools=[tool])
        return list(await asyncio.gather(one("acme", bailing), one("globex", steady)))

    asyncio.run(both())
    assert bails_of(telemetry, "acme") == 1
    assert bails_of(telemetry, "globex") == 0
    fallbacks = {semconv.TENANT_ID: "acme"}
    assert telemetry.value(semconv.SYNTHESIS_FALLBACKS.name, fallbacks) == 1
    assert _fallbacks(telemetry) == 1
    checks.assert_each_span_in_its_tenant_s_run(telemetry, "invoke_agent ReAct")


# --- errors: the framework's own exception, unchanged --------------------------------------------


class ModelDown(RuntimeError):
    pass


class DownLM(DummyLM):
    """DSPy's scripted LM whose script ends in a failure: its answers, then ``raised``."""

    def __init__(self, script: list[dict[str, Any]]) -> None:
        super().__init__(script)
        self.raised = ModelDown("provider unavailable")
        self.answers = self._then_fail(script)

    def _then_fail(self, script: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        yield from script
        raise self.raised


def test_a_raising_model_reaches_the_caller_as_dspys_error_and_the_run_is_an_error(
    telemetry: InMemoryTelemetry, callback: SymfonicCallback, entry: Any
) -> None:
    program = dspy.ReAct("question -> answer", tools=[lookup], max_iters=5)
    lm = DownLM([STEP])
    program.set_lm(lm)
    with tenant_scope("acme"), pytest.raises(LMUnexpectedError) as caught:
        entry(program)
    if entry is not streamify:  # streamify re-raises DSPy's error from its worker, uncaused
        assert caught.value.__cause__ is lm.raised  # DSPy's own error, the provider's its cause
    assert_error_run(telemetry, "acme", caught.value, span="invoke_agent ReAct")
    failed = [s for s in telemetry.spans() if (s.attributes or {}).get(semconv.ERROR_TYPE)]
    assert any(s.name == "chat dummy" for s in failed)


def test_a_forced_answer_that_raised_is_a_raised_cap(
    telemetry: InMemoryTelemetry, callback: SymfonicCallback
) -> None:
    program = dspy.ReAct("question -> answer", tools=[lookup], max_iters=2)
    program.set_lm(DownLM([STEP, STEP]))  # the extract step's call fails
    with tenant_scope("acme"), pytest.raises(LMUnexpectedError):
        call(program)
    assert bails_of(telemetry, "acme", "tool_calls_with_no_text") == 1
    where = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "error"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    stops = {semconv.RUN_STOP_REASON: "recursion_limit"}
    assert telemetry.value(semconv.STOP_REASONS.name, stops) == 1


def test_a_failing_tool_is_swallowed_by_react_and_the_run_completes(
    telemetry: InMemoryTelemetry, callback: SymfonicCallback
) -> None:
    def lookup(q: str) -> str:
        """Look something up."""
        raise ValueError("backend down")

    with tenant_scope("acme"):
        prediction = call(_react(healthy(1), tools=[lookup]))
    assert prediction.answer == "It is sunny."
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.RUN_OUTCOME: "completed"}) == 1
    tool_span = telemetry.span("execute_tool lookup")
    assert (tool_span.attributes or {})[semconv.ERROR_TYPE] == "ValueError"
    assert bails_of(telemetry, "acme") == 0


# --- never hurt the program; bounded -------------------------------------------------------------


def test_a_failing_adapter_never_reaches_the_program_and_is_counted_as_dropped(
    telemetry: InMemoryTelemetry, callback: SymfonicCallback, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks.assert_a_broken_tool_start_is_only_dropped(
        monkeypatch,
        telemetry,
        callback,
        "SymfonicCallback.tool_start",
        lambda: call(_react(healthy(1))).answer,
    )


def test_open_runs_are_bounded_and_the_oldest_is_abandoned(telemetry: InMemoryTelemetry) -> None:
    """Three programs on three threads, all inside a tool at once: past ``max_open_runs=2``
    the oldest run is closed as abandoned, and its late end is ignored."""
    made = SymfonicCallback(handler=telemetry.handler(), max_open_runs=2)
    started = threading.Semaphore(0)
    release = threading.Event()

    def wait() -> str:
        """Wait for the others."""
        started.release()
        release.wait(10)
        return "done"

    class Waiter(dspy.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tool = dspy.Tool(wait)

        def forward(self) -> dspy.Prediction:
            return dspy.Prediction(answer=self.tool())

    def one() -> None:
        with dspy.context(callbacks=[made]):
            Waiter()()

    threads = [threading.Thread(target=one) for _ in range(3)]
    for thread in threads:
        thread.start()
    for _ in threads:
        assert started.acquire(timeout=10)
    assert made.open_runs == 2
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.RUN_OUTCOME: "abandoned"}) == 1
    release.set()
    for thread in threads:
        thread.join(10)
    assert made.open_runs == 0
    assert telemetry.value(semconv.AGENT_RUNS.name) == 3


def test_bad_arguments_get_clear_errors() -> None:
    checks.assert_bad_arguments_rejected(SymfonicCallback)


# --- loops ---------------------------------------------------------------------------------------


def test_three_identical_lookups_are_one_looping_run_counted_while_it_runs(
    telemetry: InMemoryTelemetry, callback: SymfonicCallback, entry: Any
) -> None:
    watched, seen_in_call = checks.watched_lookup(telemetry)
    with tenant_scope("acme"):
        entry(_react(healthy(3), tools=[watched]))
    checks.assert_three_lookups_looped(
        telemetry, seen_in_call, span="invoke_agent ReAct", inference_calls=5, repeated_calls=None
    )  # three lookups, finish, extract


def test_two_lookups_are_no_loop_and_the_options_reach_the_handler(
    telemetry: InMemoryTelemetry,
) -> None:
    def once(steps: int, **options: Any) -> None:
        made = SymfonicCallback(handler=telemetry.handler(**options))
        with dspy.context(callbacks=[made]):
            call(_react(healthy(steps)))

    checks.assert_loop_options_reach_the_handler(telemetry, once, turns=(2, 3, 1))


def test_a_cancelled_run_is_cancelled_never_a_bail(
    telemetry: InMemoryTelemetry, callback: SymfonicCallback
) -> None:
    stuck, entered = checks.stuck_lookup()
    program = _react(capped(5), tools=[stuck])
    checks.cancel_once_entered(lambda: program.acall(question="q"), entered)
    checks.assert_cancelled_never_a_bail(telemetry)


def test_under_content_capture_the_question_and_the_tool_call_are_recorded(
    telemetry: InMemoryTelemetry,
) -> None:
    made = SymfonicCallback(handler=telemetry.handler(capture_content=True))
    with dspy.context(callbacks=[made]), tenant_scope("acme"):
        call(_react(healthy(1)))
    run = telemetry.span("invoke_agent ReAct")
    assert "What is the weather?" in repr(dict(run.attributes or {}))
    attributes = telemetry.span("execute_tool lookup").attributes or {}
    assert "weather" in str(attributes[semconv.GEN_AI_TOOL_CALL_ARGUMENTS])
    assert "result for weather" in str(attributes[semconv.GEN_AI_TOOL_CALL_RESULT])
