"""The Agno adapter, on real Agno agents with a scripted ``Model`` (no network).

``SymfonicAgno().instrument(agent)`` adds Agno pre/post hooks and a tool hook. Agno's
``tool_call_limit`` is soft: calls past it are refused in a tool result and the loop goes on,
so a run whose model asked for more tool calls than the limit is a silent bail for its tenant
with stop reason ``recursion_limit``, whatever it answered after; a run at the limit is not.
``run``, ``arun`` and streaming in either give the same verdicts.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("agno", reason="needs the agno extra")

from agno.run.agent import RunErrorEvent, RunOutput
from agno.run.base import RunStatus
from opentelemetry.trace import StatusCode

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.agno import SymfonicAgno
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import adapter_checks as checks
from tests.support.agno_support import QUESTION, ScriptedModel, agent
from tests.support.bail_support import bails_of
from tests.support.loop_support import looping


def run(built: Any, **kwargs: Any) -> Any:
    return built.run(QUESTION, **kwargs)


def arun(built: Any, **kwargs: Any) -> Any:
    return asyncio.run(built.arun(QUESTION, **kwargs))


def run_stream(built: Any, **kwargs: Any) -> Any:
    output = None
    for event in built.run(QUESTION, stream=True, yield_run_output=True, **kwargs):
        output = event if output is None or not isinstance(output, RunOutput) else output
    return output


def arun_stream(built: Any, **kwargs: Any) -> Any:
    async def consume() -> Any:
        output = None
        async for event in built.arun(QUESTION, stream=True, yield_run_output=True, **kwargs):
            output = event if output is None or not isinstance(output, RunOutput) else output
        return output

    return asyncio.run(consume())


ENTRY_POINTS = {"run": run, "arun": arun, "run_stream": run_stream, "arun_stream": arun_stream}


entry = checks.entry_fixture(ENTRY_POINTS)


def _adapter(telemetry: InMemoryTelemetry, **kwargs: Any) -> SymfonicAgno:
    return SymfonicAgno(handler=telemetry.handler(**kwargs))


def _chats(telemetry: InMemoryTelemetry) -> int:
    return len([s for s in telemetry.spans() if s.name == "chat scripted"])


# --- the soft tool-call limit ------------------------------------------------------------------


@pytest.mark.parametrize(("tool_turns", "bails"), [(2, 0), (3, 1)])
def test_the_soft_limit_exceeded_is_a_silent_bail_and_at_the_limit_is_not(
    telemetry: InMemoryTelemetry, entry: Any, tool_turns: int, bails: int
) -> None:
    """A limit of 2: two tool calls then the answer is within it; a third call is refused by
    Agno (the loop goes on and the model answers), which is the limit exceeded."""
    built = agent(_adapter(telemetry), ScriptedModel(tool_turns=tool_turns), tool_call_limit=2)
    with tenant_scope("acme"):
        output = entry(built)

    assert output.status is RunStatus.completed  # Agno raised nothing and answered
    assert output.content == "It is sunny."
    assert bails_of(telemetry, "acme", "tool_calls_with_no_text") == bails
    assert telemetry.value(semconv.SILENT_BAILS.name) == bails
    stop = "recursion_limit" if bails else "end_turn"
    stops = {semconv.RUN_STOP_REASON: stop, semconv.TENANT_ID: "acme"}
    assert telemetry.value(semconv.STOP_REASONS.name, stops) == 1
    run_span = telemetry.span("invoke_agent helper")
    assert run_span.status.status_code is not StatusCode.ERROR
    assert run_span.attributes is not None
    assert run_span.attributes[semconv.RUN_STOP_REASON] == stop
    where = {
        semconv.TENANT_ID: "acme",
        semconv.RUN_OUTCOME: "completed",
        semconv.RESPONSE_EMPTY: False,
    }
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    assert _chats(telemetry) == tool_turns + 1
    executed = len([s for s in telemetry.spans() if s.name == "execute_tool lookup"])
    assert executed == 2  # the refused call never ran


def test_a_healthy_run_has_our_span_shape(telemetry: InMemoryTelemetry) -> None:
    adapter = _adapter(telemetry)
    built = agent(adapter, ScriptedModel(tool_turns=1))
    with tenant_scope("acme"):
        assert run(built).content == "It is sunny."

    assert telemetry.value(semconv.SILENT_BAILS.name) == 0
    run_span = telemetry.span("invoke_agent helper")
    assert run_span.attributes is not None
    assert run_span.attributes[semconv.RUN_STOP_REASON] == "end_turn"
    checks.assert_two_chats_and_the_tool_under(telemetry, run_span)
    assert adapter.open_runs == 0


def test_a_blank_answer_is_a_silent_bail(telemetry: InMemoryTelemetry) -> None:
    built = agent(_adapter(telemetry), ScriptedModel(tool_turns=0, answer=""))
    with tenant_scope("acme"):
        run(built)
    assert bails_of(telemetry, "acme", "no_content_no_tool_calls") == 1


# --- errors: Agno swallows them into the run's status --------------------------------------------


def test_a_raising_model_is_an_error_run_with_its_type_never_a_bail(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    built = agent(_adapter(telemetry), ScriptedModel(fail=True))
    with tenant_scope("acme"):
        output = entry(built)
    # Agno's own verdict, unchanged: the run's status, or its error event when streamed
    assert isinstance(output, RunErrorEvent) or output.status is RunStatus.error
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0
    where = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "error"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    run_span = telemetry.span("invoke_agent helper")
    assert run_span.status.status_code is StatusCode.ERROR
    assert run_span.attributes is not None
    assert run_span.attributes[semconv.ERROR_TYPE] == "ConnectionError"


def test_a_copy_of_the_agent_is_recorded_and_its_failing_model_seen(
    telemetry: InMemoryTelemetry,
) -> None:
    """What Agno's servers run per request: ``deep_copy`` keeps the hooks and the model."""
    copied = agent(_adapter(telemetry), ScriptedModel(fail=True)).deep_copy()
    with tenant_scope("acme"):
        assert run(copied).status is RunStatus.error
    errors = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "error"}
    assert telemetry.value(semconv.AGENT_RUNS.name, errors) == 1
    assert type(copied.model).__name__ == "ScriptedModel"  # the guard keeps the class's name


def test_a_raising_tool_is_a_failed_tool_and_the_run_completes(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    def lookup(q: str) -> str:
        """Look something up."""
        raise KeyError(q)

    built = agent(_adapter(telemetry), ScriptedModel(tool_turns=1), tools=[lookup])
    with tenant_scope("acme"):
        output = entry(built)
    assert output.content == "It is sunny."  # Agno told the model of the error
    tool_span = telemetry.span("execute_tool lookup")
    assert tool_span.attributes is not None
    assert tool_span.attributes[semconv.ERROR_TYPE] == "KeyError"
    where = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "completed"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0


# --- tenants ------------------------------------------------------------------------------------


def test_two_tenants_interleaved_from_metadata_and_session_state(
    telemetry: InMemoryTelemetry,
) -> None:
    adapter = _adapter(telemetry)
    capped = agent(adapter, ScriptedModel(tool_turns=3), tool_call_limit=2)
    healthy = agent(adapter, ScriptedModel(tool_turns=1))

    async def both() -> None:
        await asyncio.gather(
            capped.arun(QUESTION, metadata={"tenant_id": "acme"}),
            healthy.arun(QUESTION, session_state={"tenant_id": "globex"}),
            capped.arun(QUESTION, metadata={"tenant_id": "acme"}),
            healthy.arun(QUESTION, session_state={"tenant_id": "globex"}),
        )

    asyncio.run(both())
    checks.assert_only_acme_bailed(telemetry, 2)
    assert adapter.open_runs == 0


def test_the_runs_metadata_tenant_wins_over_the_session_states(
    telemetry: InMemoryTelemetry,
) -> None:
    """The caller's per-run metadata names the tenant; a session's stored one is the fallback."""
    built = agent(_adapter(telemetry), ScriptedModel(tool_turns=1))
    built.run(QUESTION, metadata={"tenant_id": "acme"}, session_state={"tenant_id": "globex"})
    runs = {attrs[semconv.TENANT_ID]: n for attrs, n in telemetry.points(semconv.AGENT_RUNS.name)}
    assert runs == {"acme": 1}


# --- never hurt the agent -----------------------------------------------------------------------


def test_a_failing_adapter_never_reaches_the_agent_and_is_counted_as_dropped(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = _adapter(telemetry)
    built = agent(adapter, ScriptedModel(tool_turns=1))
    checks.assert_a_broken_tool_start_is_only_dropped(
        monkeypatch, telemetry, adapter, "SymfonicAgno.tool_start", lambda: run(built).content
    )


@checks.open_runs_past_a_cap_of_two
def test_open_runs_are_capped_the_oldest_ends_abandoned(
    telemetry: InMemoryTelemetry, started: int, open_after: int
) -> None:
    """Runs whose end never comes (a paused or cancelled Agno run calls no post hook)."""
    adapter = SymfonicAgno(handler=telemetry.handler(), max_open_runs=2)
    for n in range(started):
        context = SimpleNamespace(run_id=f"r{n}", session_id="s", metadata=None, session_state=None)
        adapter.pre_hook(None, context, SimpleNamespace(name="helper"))
    checks.assert_open_runs_capped(telemetry, adapter, started, open_after, adapter.close)


def test_instrument_is_idempotent_and_bad_arguments_get_clear_errors(
    telemetry: InMemoryTelemetry,
) -> None:
    adapter = _adapter(telemetry)
    built = agent(adapter, ScriptedModel(tool_turns=1))
    adapter.instrument(built)
    assert built.pre_hooks is not None and len(built.pre_hooks) == 1
    with tenant_scope("acme"):
        run(built)
    assert telemetry.value(semconv.AGENT_RUNS.name) == 1
    checks.assert_bad_arguments_rejected(SymfonicAgno)
    with pytest.raises(TypeError, match="Agent"):
        adapter.instrument(object())  # type: ignore[arg-type]


# --- loops --------------------------------------------------------------------------------------


def test_three_identical_lookups_are_one_looping_run_counted_while_it_runs(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    lookup, seen_in_call = checks.watched_lookup(telemetry)
    built = agent(_adapter(telemetry), ScriptedModel(tool_turns=3), tools=[lookup])
    with tenant_scope("acme"):
        assert entry(built).content == "It is sunny."
    checks.assert_three_lookups_looped(telemetry, seen_in_call)


def test_two_lookups_are_no_loop_and_the_options_reach_the_handler(
    telemetry: InMemoryTelemetry,
) -> None:
    def go(tool_turns: int, **options: Any) -> None:
        run(agent(_adapter(telemetry, **options), ScriptedModel(tool_turns=tool_turns)))

    checks.assert_loop_options_reach_the_handler(telemetry, go)


def test_model_calls_are_read_at_each_tool_call_so_the_call_budget_counts_while_it_runs(
    telemetry: InMemoryTelemetry,
) -> None:
    lookup, seen_in_call = checks.watched_lookup(telemetry, semconv.LOOP_CALL_BUDGET)
    adapter = _adapter(telemetry, runaway_calls=2)
    with tenant_scope("acme"):
        run(agent(adapter, ScriptedModel(tool_turns=3), tools=[lookup]))
    assert seen_in_call == [0, 0, 1]  # the third model call, read as its tool call starts
    assert looping(telemetry, semconv.LOOP_CALL_BUDGET, tenant__id="acme") == 1
    assert _chats(telemetry) == 4
