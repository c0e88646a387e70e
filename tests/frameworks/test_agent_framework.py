"""The Microsoft Agent Framework adapter, on real agents with a scripted chat client.

``SymfonicAgentFramework().middleware`` (agent, chat and function middleware) is given to
``Agent(middleware=...)``. The loop's cap raises nothing: after ``max_iterations`` model calls
the framework makes one more call with ``tool_choice="none"`` and returns its reply. That call
is a ``react_synthesize_fallback`` call (``synthesis.recovered`` when it wrote text) and the run
a silent bail with stop reason ``recursion_limit``; an answer on the last allowed call is not.
``run`` and ``run(stream=True)`` give the same verdicts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("agent_framework", reason="needs the agent-framework extra")

from agent_framework import AgentSession, tool
from opentelemetry.trace import StatusCode

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.agent_framework import SymfonicAgentFramework
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import adapter_checks as checks
from tests.support.agent_framework_support import (
    QUESTION,
    ScriptedClient,
    agent,
    capped_client,
)
from tests.support.bail_support import bails_of


async def _run(built: Any, **kwargs: Any) -> Any:
    return await built.run(QUESTION, **kwargs)


async def _stream(built: Any, **kwargs: Any) -> Any:
    stream = built.run(QUESTION, stream=True, **kwargs)
    async for _ in stream:
        pass
    return await stream.get_final_response()


ENTRY_POINTS = {"run": _run, "stream": _stream}


@pytest.fixture(params=sorted(ENTRY_POINTS))
def entry(request: pytest.FixtureRequest) -> Iterator[Any]:
    def call(built: Any, **kwargs: Any) -> Any:
        return asyncio.run(ENTRY_POINTS[request.param](built, **kwargs))

    yield call


def _adapter(telemetry: InMemoryTelemetry, **kwargs: Any) -> SymfonicAgentFramework:
    return SymfonicAgentFramework(handler=telemetry.handler(**kwargs))


_fallbacks = checks.fallbacks


# --- the cap: max_iterations and the forced final answer ----------------------------------------


@pytest.mark.parametrize(("final", "recovered"), [("Probably sunny.", True), ("", False)])
def test_max_iterations_is_a_silent_bail_and_the_forced_answer_a_fallback(
    telemetry: InMemoryTelemetry, entry: Any, final: str, recovered: bool
) -> None:
    client = capped_client(3, final=final)
    with tenant_scope("acme"):
        response = entry(agent(_adapter(telemetry), client))

    assert client.tool_choices[-1] == "none" and len(client.tool_choices) == 4
    assert response.text  # the framework returned normally (a canned text when blank)
    assert bails_of(telemetry, "acme", "tool_calls_with_no_text") == 1
    assert telemetry.value(semconv.SILENT_BAILS.name) == 1
    assert _fallbacks(telemetry, recovered) == 1
    assert _fallbacks(telemetry, not recovered) == 0
    stops = {semconv.RUN_STOP_REASON: "recursion_limit", semconv.TENANT_ID: "acme"}
    assert telemetry.value(semconv.STOP_REASONS.name, stops) == 1
    where = {
        semconv.TENANT_ID: "acme",
        semconv.RUN_OUTCOME: "completed",
        semconv.RESPONSE_EMPTY: not recovered,
    }
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    run = telemetry.span("invoke_agent helper")
    assert run.status.status_code is not StatusCode.ERROR
    assert run.attributes is not None
    assert run.attributes[semconv.RUN_STOP_REASON] == "recursion_limit"
    nodes = [
        (s.attributes or {}).get(semconv.NODE_NAME)
        for s in telemetry.spans()
        if s.name == "chat scripted"
    ]
    assert nodes.count(semconv.NODE_SYNTHESIZE_FALLBACK) == 1 and len(nodes) == 4


def test_max_function_calls_ends_the_same_way(telemetry: InMemoryTelemetry, entry: Any) -> None:
    client = ScriptedClient(function_invocation_configuration={"max_function_calls": 2})
    with tenant_scope("acme"):
        assert entry(agent(_adapter(telemetry), client)).text == "Probably sunny."
    assert client.tool_choices == ["auto", "auto", "none"]
    assert bails_of(telemetry, "acme", "tool_calls_with_no_text") == 1
    assert _fallbacks(telemetry, True) == 1


@pytest.mark.parametrize(("max_iterations", "bails"), [(3, 0), (2, 1)])
def test_an_answer_on_the_last_allowed_call_is_no_bail_and_one_short_is(
    telemetry: InMemoryTelemetry, entry: Any, max_iterations: int, bails: int
) -> None:
    """Two tool turns then the answer: three model calls. ``max_iterations=3`` lets it answer."""
    client = capped_client(max_iterations, tool_turns=2)
    with tenant_scope("acme"):
        entry(agent(_adapter(telemetry), client))
    assert ("none" in client.tool_choices) == bool(bails)
    assert bails_of(telemetry, "acme") == bails
    assert telemetry.value(semconv.SYNTHESIS_FALLBACKS.name) == bails
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 1


def test_a_healthy_run_has_our_span_shape(telemetry: InMemoryTelemetry, entry: Any) -> None:
    adapter = _adapter(telemetry)
    with tenant_scope("acme"):
        assert entry(agent(adapter, ScriptedClient(tool_turns=1))).text == "It is sunny."
    checks.assert_one_healthy_run(telemetry)
    run = telemetry.span("invoke_agent helper")
    assert (run.attributes or {})[semconv.RUN_STOP_REASON] == "end_turn"
    checks.assert_two_chats_and_the_tool_under(telemetry, run)
    assert adapter.open_runs == 0


def test_a_user_tool_choice_none_is_no_forced_answer(telemetry: InMemoryTelemetry) -> None:
    with tenant_scope("acme"):
        asyncio.run(
            agent(_adapter(telemetry), ScriptedClient(final="Hi.")).run(
                QUESTION, options={"tool_choice": "none"}
            )
        )
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0
    assert telemetry.value(semconv.SYNTHESIS_FALLBACKS.name) == 0


# --- errors -------------------------------------------------------------------------------------


def test_a_raising_model_reaches_the_caller_and_the_run_is_error_never_a_bail(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    with tenant_scope("acme"), pytest.raises(ConnectionError, match="model down"):
        entry(agent(_adapter(telemetry), ScriptedClient(fail=True)))
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0
    where = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "error"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    run = telemetry.span("invoke_agent helper")
    assert run.status.status_code is StatusCode.ERROR
    assert (run.attributes or {})[semconv.ERROR_TYPE] == "ConnectionError"


def test_a_raising_tool_is_a_failed_tool_and_the_run_completes(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    @tool(name="lookup")
    def broken(q: str) -> str:
        """Look something up."""
        raise KeyError(q)

    with tenant_scope("acme"):
        response = entry(agent(_adapter(telemetry), ScriptedClient(tool_turns=1), [broken]))
    assert response.text == "It is sunny."  # the framework told the model of the error
    assert (telemetry.span("execute_tool lookup").attributes or {})[semconv.ERROR_TYPE]
    where = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "completed"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0


def test_a_cancelled_tool_ends_its_span_at_the_tool_naming_the_cancellation(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    """Cancellation is no ``Exception``: the tool's span still ends at the tool, naming it,
    not later with the run as an unfinished step."""

    @tool(name="lookup")
    def cancelled(q: str) -> str:
        """Look something up."""
        raise asyncio.CancelledError

    with tenant_scope("acme"), pytest.raises(asyncio.CancelledError):
        entry(agent(_adapter(telemetry), ScriptedClient(tool_turns=1), [cancelled]))
    attributes = telemetry.span("execute_tool lookup").attributes or {}
    assert attributes[semconv.ERROR_TYPE] == "CancelledError"
    assert semconv.STEP_UNFINISHED not in attributes


# --- tenants ------------------------------------------------------------------------------------


def test_two_tenants_interleaved_from_the_session_state(telemetry: InMemoryTelemetry) -> None:
    adapter = _adapter(telemetry)
    capped = agent(adapter, capped_client(2))
    healthy = agent(adapter, ScriptedClient(tool_turns=1))

    def session(tenant: str) -> AgentSession:
        made = AgentSession()
        made.state["tenant_id"] = tenant
        return made

    async def both() -> None:
        await asyncio.gather(
            capped.run(QUESTION, session=session("acme")),
            healthy.run(QUESTION, session=session("globex")),
            _stream(capped, session=session("acme")),
            _stream(healthy, session=session("globex")),
        )

    asyncio.run(both())
    checks.assert_only_acme_bailed(telemetry, 2)
    assert adapter.open_runs == 0


# --- never hurt the agent -----------------------------------------------------------------------


def test_a_failing_adapter_never_reaches_the_agent_and_is_counted_as_dropped(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, entry: Any
) -> None:
    adapter = _adapter(telemetry)
    built = agent(adapter, ScriptedClient(tool_turns=1))
    where = "SymfonicAgentFramework.tool_start"
    checks.assert_a_broken_tool_start_is_only_dropped(
        monkeypatch, telemetry, adapter, where, lambda: entry(built).text
    )


@checks.open_runs_past_a_cap_of_two
def test_open_runs_are_capped_the_oldest_ends_abandoned(
    telemetry: InMemoryTelemetry, started: int, open_after: int
) -> None:
    """Streams never consumed: their runs never end; the oldest is closed past the cap."""
    adapter = SymfonicAgentFramework(handler=telemetry.handler(), max_open_runs=2)
    built = agent(adapter, ScriptedClient(tool_turns=0))

    async def leave_streams() -> None:
        for _ in range(started):
            stream = built.run(QUESTION, stream=True)
            await stream.__anext__()  # the run starts, its stream is then dropped unfinished

    asyncio.run(leave_streams())
    checks.assert_open_runs_capped(telemetry, adapter, started, open_after, adapter.close)


def test_bad_arguments_get_clear_errors() -> None:
    checks.assert_bad_arguments_rejected(SymfonicAgentFramework)


# --- loops --------------------------------------------------------------------------------------


def test_three_identical_lookups_are_one_looping_run_counted_while_it_runs(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    watched, seen_in_call = checks.watched_lookup(telemetry)
    with tenant_scope("acme"):
        entry(agent(_adapter(telemetry), ScriptedClient(tool_turns=3), [tool(watched)]))
    checks.assert_three_lookups_looped(telemetry, seen_in_call)


def test_two_lookups_are_no_loop_and_the_options_reach_the_handler(
    telemetry: InMemoryTelemetry,
) -> None:
    def go(tool_turns: int, **options: Any) -> None:
        built = agent(_adapter(telemetry, **options), ScriptedClient(tool_turns=tool_turns))
        asyncio.run(built.run(QUESTION))

    checks.assert_loop_options_reach_the_handler(telemetry, go)
