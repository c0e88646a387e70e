"""Checks every framework adapter's tests make the same way: the looping run of three identical
lookups, the loop options reaching the handler, a failing adapter counted as a dropped event, a
cancelled run, and clear errors for bad arguments. The framework environments import this too, so
it needs only pytest and the package."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.bail_support import bails_of
from tests.support.loop_support import all_loop_events, assert_no_text, looping, repeated


def entry_fixture(points: dict[str, Callable[..., Any]]) -> Any:
    """The ``entry`` fixture of an adapter's tests: each test that takes it runs once per entry
    point of its framework (``points``, by name)."""

    @pytest.fixture(params=sorted(points))
    def entry(request: pytest.FixtureRequest) -> Callable[..., Any]:
        return points[request.param]

    return entry


# Runs started past an adapter's cap of two open runs, and how many stay open.
open_runs_past_a_cap_of_two = pytest.mark.parametrize(("started", "open_after"), [(2, 2), (3, 2)])


def assert_open_runs_capped(
    telemetry: InMemoryTelemetry,
    adapter: Any,
    started: int,
    open_after: int,
    close: Callable[[], Any],
) -> None:
    """``started`` runs left open on ``adapter``: the oldest past the cap ended abandoned, and
    ``close`` (the adapter's shutdown) ends what is left abandoned too."""
    abandoned = {semconv.RUN_OUTCOME: "abandoned"}
    assert adapter.open_runs == open_after
    assert telemetry.value(semconv.AGENT_RUNS.name, abandoned) == started - open_after
    close()
    assert adapter.open_runs == 0
    assert telemetry.value(semconv.AGENT_RUNS.name, abandoned) == started


def watched_lookup(
    telemetry: InMemoryTelemetry, kind: str = semconv.LOOP_REPEATED_TOOL_CALL
) -> tuple[Callable[[str], str], list[float]]:
    """A ``lookup`` tool, and the ``kind`` looping runs it read inside each of its calls: what
    shows a loop is counted while its run still runs."""
    seen_in_call: list[float] = []

    def lookup(q: str) -> str:
        """Look something up."""
        seen_in_call.append(looping(telemetry, kind))
        return f"result for {q}"

    return lookup, seen_in_call


def assert_three_lookups_looped(
    telemetry: InMemoryTelemetry,
    seen_in_call: list[float] | None,
    *,
    span: str = "invoke_agent helper",
    inference_calls: int = 4,
    repeated_calls: int | None = 2,
    tool: str = "lookup",
) -> None:
    """``tool(q="weather")`` called three times for tenant ``acme``: one looping run, counted
    at the third call (``seen_in_call`` read inside each call, where the test watched it), two
    repeats, the run span's counts and loop event, and the argument's text nowhere."""
    if seen_in_call is not None:
        assert seen_in_call == [0, 0, 1]  # detected before the run ended
    assert looping(telemetry, semconv.LOOP_REPEATED_TOOL_CALL, tenant__id="acme") == 1
    assert repeated(telemetry, tenant__id="acme") == 2
    attributes = telemetry.span(span).attributes or {}
    assert attributes[semconv.RUN_TOOL_CALLS] == 3
    if repeated_calls is not None:
        assert attributes[semconv.RUN_REPEATED_TOOL_CALLS] == repeated_calls
    assert attributes[semconv.RUN_INFERENCE_CALLS] == inference_calls
    (event,) = all_loop_events(telemetry)
    assert event[semconv.LOOP_COUNT] == 3 and event[semconv.GEN_AI_TOOL_NAME] == tool
    assert_no_text(telemetry, '"weather"')


def assert_loop_options_reach_the_handler(
    telemetry: InMemoryTelemetry, run: Callable[..., Any], turns: tuple[int, int, int] = (2, 3, 2)
) -> None:
    """``run(tool_turns, **options)`` runs one agent (here for tenant ``acme``) whose adapter
    gets ``options``: two lookups are no loop, ``loop_threshold=4`` lets three pass, and
    ``runaway_calls=2`` makes a run of three model calls a call-budget loop."""
    with tenant_scope("acme"):
        run(turns[0])
        assert looping(telemetry) == 0 and repeated(telemetry) == 1
        run(turns[1], loop_threshold=4)
        assert looping(telemetry) == 0
        run(turns[2], runaway_calls=2)  # three model calls past a budget of two
    assert looping(telemetry, semconv.LOOP_CALL_BUDGET, tenant__id="acme") == 1


def assert_dropped_once_and_the_run_counted(telemetry: InMemoryTelemetry, where: str) -> None:
    """The adapter's own failure at ``where`` was one dropped event, and tenant ``acme``'s run
    was still counted."""
    dropped = {semconv.TELEMETRY_EVENT: where}
    assert telemetry.value(semconv.DROPPED_EVENTS.name, dropped) == 1
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 1


def assert_bad_arguments_rejected(adapter: Callable[..., Any]) -> None:
    """A handler that is not one, and a cap below one, are refused with errors that say so."""
    with pytest.raises(TypeError, match="OTelCallbackHandler"):
        adapter(handler=object())
    with pytest.raises(ValueError, match="max_open_runs"):
        adapter(max_open_runs=0)


def assert_one_healthy_run(telemetry: InMemoryTelemetry) -> None:
    """No silent bail, and one completed run with an answer for tenant ``acme``."""
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0
    where = {
        semconv.TENANT_ID: "acme",
        semconv.RUN_OUTCOME: "completed",
        semconv.RESPONSE_EMPTY: False,
    }
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1


def stuck_lookup() -> tuple[Callable[[str], Awaitable[str]], asyncio.Event]:
    """An async ``lookup`` tool that never returns, and the event it sets once entered."""
    entered = asyncio.Event()

    async def lookup(q: str) -> str:
        """Look something up."""
        entered.set()
        await asyncio.sleep(30)
        return "never"

    return lookup, entered


def cancel_once_entered(
    start: Callable[[], Coroutine[Any, Any, Any]], entered: asyncio.Event
) -> None:
    """Runs ``start()`` as a task of tenant ``acme``, cancels it once ``entered`` is set, and
    checks the cancellation reaches the caller unchanged."""

    async def go() -> None:
        with tenant_scope("acme"):
            task = asyncio.create_task(start())
        await asyncio.wait_for(entered.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())


def assert_each_span_in_its_tenant_s_run(telemetry: InMemoryTelemetry, run_span: str) -> None:
    """Two ``run_span`` runs, one of ``acme`` and one of ``globex``, ran interleaved: every span
    recorded carries the tenant of its own run."""
    runs = {
        (s.attributes or {})[semconv.RUN_ID]: (s.attributes or {})[semconv.TENANT_ID]
        for s in telemetry.spans()
        if s.name == run_span
    }
    assert sorted(runs.values()) == ["acme", "globex"]
    for span in telemetry.spans():
        attributes = span.attributes or {}
        assert runs[attributes[semconv.RUN_ID]] == attributes[semconv.TENANT_ID], span.name


def assert_cancelled_never_a_bail(telemetry: InMemoryTelemetry) -> None:
    """Tenant ``acme``'s one run ended cancelled, and no silent bail was counted."""
    where = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "cancelled"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0


def break_tool_start(
    monkeypatch: pytest.MonkeyPatch, adapter: Any, error: type[Exception] = OSError
) -> None:
    """The adapter's own code fails opening a tool span (not the handler's guard): what
    ``assert_dropped_once_and_the_run_counted`` then reads."""

    def broken(*args: Any, **kwargs: Any) -> None:
        raise error("telemetry down")

    monkeypatch.setattr(adapter._book, "start_tool", broken)


def assert_a_broken_tool_start_is_only_dropped(
    monkeypatch: pytest.MonkeyPatch,
    telemetry: InMemoryTelemetry,
    adapter: Any,
    where: str,
    answer: Callable[[], Any],
    error: type[Exception] = OSError,
) -> None:
    """With the adapter's tool start broken (``break_tool_start``), ``answer()`` for tenant
    ``acme`` still answers, and the failure is one dropped event at ``where``."""
    break_tool_start(monkeypatch, adapter, error)
    with tenant_scope("acme"):
        assert answer() == "It is sunny."
    assert_dropped_once_and_the_run_counted(telemetry, where)


def assert_only_acme_bailed(telemetry: InMemoryTelemetry, bails: int) -> None:
    """Tenant ``acme`` bailed ``bails`` times, tenant ``globex`` never, in as many runs."""
    assert bails_of(telemetry, "acme") == bails
    assert bails_of(telemetry, "globex") == 0
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "globex"}) == bails


def assert_two_chats_and_the_tool_under(
    telemetry: InMemoryTelemetry,
    run: ReadableSpan,
    chat: str = "chat scripted",
    tool: str = "lookup",
    input_tokens: int | None = 10,
) -> None:
    """Two ``chat`` spans and the ``tool`` span are children of ``run``, the first chat read
    ``input_tokens`` (where the test's model reports them)."""
    chats = [s for s in telemetry.spans() if s.name == chat]
    assert len(chats) == 2
    assert all(c.parent is not None and c.parent.span_id == run.context.span_id for c in chats)
    if input_tokens is not None:
        assert (chats[0].attributes or {})[semconv.GEN_AI_USAGE_INPUT_TOKENS] == input_tokens
    tool_span = telemetry.span(f"execute_tool {tool}")
    assert tool_span.parent is not None and tool_span.parent.span_id == run.context.span_id


def assert_capped_silent_bail(
    telemetry: InMemoryTelemetry, tenant: str, outcome: str = "completed"
) -> None:
    """``tenant``'s one run the step cap ended: a silent bail (tool calls, no text), the run
    ``outcome``, and the stop reason ``recursion_limit``."""
    assert bails_of(telemetry, tenant, "tool_calls_with_no_text") == 1
    assert telemetry.value(semconv.SILENT_BAILS.name) == 1
    runs = {semconv.TENANT_ID: tenant, semconv.RUN_OUTCOME: outcome}
    assert telemetry.value(semconv.AGENT_RUNS.name, runs) == 1
    stops = {semconv.RUN_STOP_REASON: "recursion_limit", semconv.TENANT_ID: tenant}
    assert telemetry.value(semconv.STOP_REASONS.name, stops) == 1


def assert_capped_run_span(telemetry: InMemoryTelemetry, span: str) -> None:
    """The capped run's span is no error and says ``recursion_limit``."""
    run = telemetry.span(span)
    assert run.status.status_code is not StatusCode.ERROR
    assert (run.attributes or {})[semconv.RUN_STOP_REASON] == "recursion_limit"


def fallbacks(telemetry: InMemoryTelemetry, recovered: bool) -> float:
    """Synthesis fallbacks counted so far that did (or did not) recover an answer."""
    where = {semconv.SYNTHESIS_RECOVERED: recovered}
    return telemetry.value(semconv.SYNTHESIS_FALLBACKS.name, where)
