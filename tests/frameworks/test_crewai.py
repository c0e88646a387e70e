"""The CrewAI adapter, on real crews with a scripted ``BaseLLM`` (no network).

``SymfonicListener`` listens on CrewAI's event bus. When an agent's executor counts ``max_iter``
iterations, CrewAI makes one more LLM call for a best final answer and returns it normally: that
run is a silent bail for its tenant (stop reason ``recursion_limit``) and its last call one
synthesis fallback, recovered when the model wrote text; an empty forced reply raises. An answer
within the budget, even on the last allowed step, is neither. ``kickoff``, ``kickoff_async``,
``akickoff`` and a streaming crew give the same verdicts. Runs in the ``crewai`` environment that
``.ci/framework-envs`` builds.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
pytest.importorskip("crewai", reason="needs the crewai extra (.ci/framework-envs)")

from crewai import Agent, Crew, Task
from crewai.events import crewai_event_bus
from crewai.events.types.llm_events import LLMCallType
from crewai.llms.base_llm import BaseLLM, llm_call_context
from crewai.tools import tool

from symfonic_otel import semconv
from symfonic_otel.crewai import SymfonicListener
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import adapter_checks as checks
from tests.support.bail_support import bails_of
from tests.support.loop_support import all_loop_events, assert_no_text, looping, repeated
from tests.support.raising_support import assert_completed_with_failed_tool, assert_error_run

# Each turn asks something new (CrewAI answers a repeated tool call from its cache).
TOOL_TURN = 'Thought: I should look it up.\nAction: lookup\nAction Input: {{"q": "weather {n}"}}'
ANSWER = "Thought: I know it now.\nFinal Answer: It is sunny."
USAGE = {"prompt_tokens": 10, "completion_tokens": 5}


class ScriptedLLM(BaseLLM):
    """Replies with tool calls for ``tool_turns`` calls, then ``answer`` (which is the forced
    final answer when the cap comes first)."""

    tool_turns: int = 0
    answer: str = ANSWER
    calls: int = 0
    # Two inputs in turn (CrewAI itself refuses a call identical to the one before it, so a
    # loop through CrewAI repeats non-consecutively; needs the tool cache off).
    repeat: bool = False

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
        **kwargs: Any,
    ) -> str:
        with llm_call_context():
            self._emit_call_started_event(
                messages=messages, from_task=from_task, from_agent=from_agent
            )
            self.calls += 1
            turn = TOOL_TURN.format(n=self.calls % 2 if self.repeat else self.calls)
            text = turn if self.calls <= self.tool_turns else self.answer
            self._emit_call_completed_event(
                response=text,
                call_type=LLMCallType.LLM_CALL,
                from_task=from_task,
                from_agent=from_agent,
                messages=messages,
                usage=USAGE,
            )
        return text


def scripted(**fields: Any) -> ScriptedLLM:
    return ScriptedLLM(model="scripted", **fields)


@tool("lookup")
def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}"


@pytest.fixture
def listener(telemetry: InMemoryTelemetry) -> Iterator[SymfonicListener]:
    made = SymfonicListener(handler=telemetry.handler())
    yield made
    crewai_event_bus.flush()
    assert made.open_runs == 0
    made.close()


def _crew(llm: ScriptedLLM, max_iter: int, role: str = "helper", **kwargs: Any) -> Crew:
    tools = kwargs.pop("tools", [lookup])
    agent = Agent(
        role=role,
        goal="Answer questions",
        backstory="A helper.",
        llm=llm,
        tools=tools,
        max_iter=max_iter,
        max_retry_limit=0,
        verbose=False,
    )
    task = Task(description="What is the weather?", expected_output="An answer.", agent=agent)
    return Crew(agents=[agent], tasks=[task], verbose=False, **kwargs)


def kickoff(crew: Crew, tenant: str) -> str:
    return crew.kickoff(inputs={"tenant_id": tenant}).raw


def kickoff_async(crew: Crew, tenant: str) -> str:
    return asyncio.run(crew.kickoff_async(inputs={"tenant_id": tenant})).raw


def akickoff(crew: Crew, tenant: str) -> str:
    return asyncio.run(crew.akickoff(inputs={"tenant_id": tenant})).raw


def streaming(crew: Crew, tenant: str) -> str:
    crew.stream = True
    output = crew.kickoff(inputs={"tenant_id": tenant})
    for _ in output:
        pass
    return output.result.raw


ENTRY_POINTS = {
    "kickoff": kickoff,
    "kickoff_async": kickoff_async,
    "akickoff": akickoff,
    "streaming": streaming,
}


entry = checks.entry_fixture(ENTRY_POINTS)


_fallbacks = checks.fallbacks


# --- the step cap: max_iter and the forced final answer ----------------------------------------


def test_max_iter_is_a_silent_bail_and_the_forced_answer_one_recovered_fallback(
    telemetry: InMemoryTelemetry, listener: SymfonicListener, entry: Any
) -> None:
    llm = scripted(tool_turns=3, answer="Final Answer: Probably sunny.")  # the 4th call
    answer = entry(_crew(llm, max_iter=3), "acme")
    crewai_event_bus.flush()

    assert answer == "Probably sunny."  # CrewAI returned normally
    assert llm.calls == 4  # three turns, then the forced final answer
    assert bails_of(telemetry, "acme", "tool_calls_with_no_text") == 1
    assert telemetry.value(semconv.SILENT_BAILS.name) == 1
    stops = {semconv.RUN_STOP_REASON: "recursion_limit", semconv.TENANT_ID: "acme"}
    assert telemetry.value(semconv.STOP_REASONS.name, stops) == 1
    runs = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "completed"}
    assert telemetry.value(semconv.AGENT_RUNS.name, runs) == 1
    assert _fallbacks(telemetry, True) == 1
    assert _fallbacks(telemetry, False) == 0
    run = telemetry.span("invoke_agent helper")
    assert run.attributes is not None
    assert run.attributes[semconv.RUN_STOP_REASON] == "recursion_limit"
    chats = [s for s in telemetry.spans() if s.name == "chat scripted"]
    assert len(chats) == 4
    recovered = [c for c in chats if (c.attributes or {}).get(semconv.SYNTHESIS_RECOVERED)]
    assert len(recovered) == 1
    assert len([s for s in telemetry.spans() if s.name == "execute_tool lookup"]) == 3


@pytest.mark.parametrize(("max_iter", "bails"), [(3, 0), (2, 1)])
def test_an_answer_on_the_last_allowed_step_is_no_bail_and_one_step_short_is(
    telemetry: InMemoryTelemetry, listener: SymfonicListener, max_iter: int, bails: int
) -> None:
    """Two tool turns then the answer: three calls. ``max_iter=3`` lets it answer; at 2 the
    third call is the forced one (the model's answer, recovered)."""
    answer = kickoff(_crew(scripted(tool_turns=2), max_iter=max_iter), "acme")
    crewai_event_bus.flush()
    assert answer == "It is sunny."
    assert bails_of(telemetry, "acme") == bails
    assert _fallbacks(telemetry, True) == bails
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 1


def test_an_empty_forced_answer_raises_and_is_an_unrecovered_fallback(
    telemetry: InMemoryTelemetry, listener: SymfonicListener
) -> None:
    llm = scripted(tool_turns=2, answer="")
    with pytest.raises(ValueError):
        kickoff(_crew(llm, max_iter=2), "acme")
    crewai_event_bus.flush()
    assert bails_of(telemetry, "acme", "tool_calls_with_no_text") == 1
    assert _fallbacks(telemetry, False) == 1
    assert _fallbacks(telemetry, True) == 0
    runs = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "error"}
    assert telemetry.value(semconv.AGENT_RUNS.name, runs) == 1


def test_an_answer_within_the_budget_is_a_completed_run_with_our_span_shape(
    telemetry: InMemoryTelemetry, listener: SymfonicListener
) -> None:
    assert kickoff(_crew(scripted(tool_turns=1), max_iter=5), "acme") == "It is sunny."
    crewai_event_bus.flush()

    checks.assert_one_healthy_run(telemetry)
    assert telemetry.value(semconv.SYNTHESIS_FALLBACKS.name) == 0
    run = telemetry.span("invoke_agent helper")
    checks.assert_two_chats_and_the_tool_under(telemetry, run)


# --- tenants ------------------------------------------------------------------------------------


def test_two_tenants_on_one_listener(
    telemetry: InMemoryTelemetry, listener: SymfonicListener
) -> None:
    kickoff(_crew(scripted(tool_turns=2), max_iter=2), "acme")
    kickoff(_crew(scripted(tool_turns=1), max_iter=5), "globex")
    crewai_event_bus.flush()

    checks.assert_only_acme_bailed(telemetry, 1)


# --- never hurt the agent -----------------------------------------------------------------------


def test_a_failing_adapter_never_reaches_the_agent_and_is_counted_as_dropped(
    telemetry: InMemoryTelemetry, listener: SymfonicListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks.break_tool_start(monkeypatch, listener)
    assert kickoff(_crew(scripted(tool_turns=1), max_iter=5), "acme") == "It is sunny."
    crewai_event_bus.flush()

    checks.assert_dropped_once_and_the_run_counted(telemetry, "SymfonicListener.tool_start")


def test_bad_arguments_get_clear_errors() -> None:
    checks.assert_bad_arguments_rejected(SymfonicListener)


# --- loops: identical tool calls and the call budget -------------------------------------------


def test_three_identical_lookups_are_one_looping_run(
    telemetry: InMemoryTelemetry, listener: SymfonicListener, entry: Any
) -> None:
    """The model asks for ``lookup`` with two inputs in turn, five times (CrewAI's tool cache
    off, so each one runs), then answers: the third identical call, not consecutive, makes one
    looping run for the tenant; three calls repeat an earlier one."""
    crew = _crew(scripted(tool_turns=5, repeat=True), max_iter=8, cache=False)
    assert entry(crew, "acme") == "It is sunny."
    crewai_event_bus.flush()
    assert looping(telemetry, semconv.LOOP_REPEATED_TOOL_CALL, tenant__id="acme") == 1
    assert repeated(telemetry, tenant__id="acme") == 3
    (event,) = all_loop_events(telemetry)
    assert event[semconv.LOOP_COUNT] == 3 and event[semconv.GEN_AI_TOOL_NAME] == "lookup"
    assert_no_text(telemetry, "weather 1")


def test_new_inputs_are_no_loop_and_the_options_reach_the_handler(
    telemetry: InMemoryTelemetry,
) -> None:
    def run(llm: ScriptedLLM, **options: Any) -> None:
        listener = SymfonicListener(handler=telemetry.handler(**options))
        try:
            kickoff(_crew(llm, max_iter=8, cache=False), "acme")
            crewai_event_bus.flush()
        finally:
            listener.close()

    run(scripted(tool_turns=3))  # a new input every turn
    assert looping(telemetry) == 0 and repeated(telemetry) == 0
    run(scripted(tool_turns=5, repeat=True), loop_threshold=4)
    assert looping(telemetry) == 0 and repeated(telemetry) == 3
    run(scripted(tool_turns=2), runaway_calls=2)  # three model calls past a budget of two
    assert looping(telemetry, semconv.LOOP_CALL_BUDGET, tenant__id="acme") == 1
    assert looping(telemetry) == 1


# --- a raising model or tool ----------------------------------------------------------------------


class ModelDown(Exception):
    """A provider failure CrewAI does not know of."""


class DownLLM(ScriptedLLM):
    """Calls ``lookup`` once, then fails as CrewAI's own LLMs do: a failed-call event, then the
    provider's exception."""

    error: Exception = ModelDown("provider down")

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        if self.calls < self.tool_turns:
            return super().call(messages, *args, **kwargs)
        with llm_call_context():
            task, agent = kwargs.get("from_task"), kwargs.get("from_agent")
            self._emit_call_started_event(messages=messages, from_task=task, from_agent=agent)
            self._emit_call_failed_event(error=str(self.error), from_task=task, from_agent=agent)
            raise self.error


def test_a_raising_model_reaches_the_caller_as_itself_and_the_run_is_error(
    telemetry: InMemoryTelemetry, listener: SymfonicListener, entry: Any
) -> None:
    """CrewAI's events carry the error as text only, so ``error.type`` is ``_OTHER``."""
    llm = DownLLM(model="scripted", tool_turns=1)
    with pytest.raises(ModelDown) as raised:
        entry(_crew(llm, max_iter=5), "acme")
    crewai_event_bus.flush()
    assert raised.value is llm.error
    assert_error_run(telemetry, "acme", raised.value, error_type=semconv.OTHER_VALUE)


def test_a_raising_tool_is_handed_to_the_model_and_the_run_completes(
    telemetry: InMemoryTelemetry, listener: SymfonicListener, entry: Any
) -> None:
    @tool("lookup")
    def failing(q: str) -> str:
        """Look something up."""
        raise LookupError("backend down")

    crew = _crew(scripted(tool_turns=1), max_iter=5, tools=[failing])
    assert "It is sunny." in entry(crew, "acme")
    crewai_event_bus.flush()  # CrewAI retries a failing tool before it tells the model
    assert_completed_with_failed_tool(telemetry, "acme", "execute_tool lookup")
