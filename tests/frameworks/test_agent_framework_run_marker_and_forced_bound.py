"""The Agent Framework adapter's two pieces of state across runs: the marker of the run whose
middleware is running, and the bounded map of forced answers still to be given.

A run that raised hands the marker back: a model call made after it in the same task belongs
to the run around it, not to the run that failed. The forced-answer map keeps at most
``max_open_runs`` entries and drops the oldest, so the newest capped run still ends capped.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

pytest.importorskip("agent_framework", reason="needs the agent-framework extra")

from agent_framework import Agent, AgentContext, AgentMiddleware

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.agent_framework import SymfonicAgentFramework
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_framework_support import QUESTION, ScriptedClient, capped_client, lookup


class _CheckFirst(AgentMiddleware):
    """A user's agent middleware that runs a checker agent (which fails, and is forgiven)
    before letting the run go on, in the run's own task."""

    def __init__(self, checker: Agent[Any]) -> None:
        self._checker = checker

    async def process(self, context: AgentContext, call_next: Any) -> None:
        with contextlib.suppress(ConnectionError):
            await self._checker.run("check this")
        await call_next()


def test_a_run_that_raised_inside_another_leaves_the_outer_runs_calls_to_the_outer_run(
    telemetry: InMemoryTelemetry,
) -> None:
    adapter = SymfonicAgentFramework(handler=telemetry.handler())
    checker = Agent(client=ScriptedClient(fail=True), name="checker", middleware=adapter.middleware)
    outer = Agent(
        client=ScriptedClient(tool_turns=1),
        tools=[lookup],
        name="helper",
        middleware=[*adapter.middleware, _CheckFirst(checker)],
    )
    with tenant_scope("acme"):
        assert asyncio.run(outer.run(QUESTION)).text == "It is sunny."

    run = telemetry.span("invoke_agent helper")
    chats = [s for s in telemetry.spans() if s.name == "chat scripted"]
    under_outer = [s for s in chats if s.parent and s.parent.span_id == run.context.span_id]
    assert len(under_outer) == 2  # the tool turn and the answer, both the outer run's
    failed = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "error"}
    assert telemetry.value(semconv.AGENT_RUNS.name, failed) == 1
    done = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "completed"}
    assert telemetry.value(semconv.AGENT_RUNS.name, done) == 1


class _Hold(AgentMiddleware):
    """Holds each run after its loop has returned (the forced answer already given) until
    released, telling the test it got there."""

    def __init__(self) -> None:
        self.reached: asyncio.Queue[None] = asyncio.Queue()
        self.release = asyncio.Event()

    async def process(self, context: AgentContext, call_next: Any) -> None:
        await call_next()
        self.reached.put_nowait(None)
        await self.release.wait()


def test_past_the_bound_the_oldest_forced_answer_is_dropped_and_the_newest_run_ends_capped(
    telemetry: InMemoryTelemetry,
) -> None:
    """Three capped runs held open after their forced call, with ``max_open_runs=2``: the
    first is abandoned when the third starts, and the map of forced answers, past its bound,
    drops the first one's, so the two runs still open both end capped."""
    adapter = SymfonicAgentFramework(handler=telemetry.handler(), max_open_runs=2)

    async def three() -> None:
        hold = _Hold()
        built = Agent(
            client=capped_client(2),
            tools=[lookup],
            name="helper",
            middleware=[*adapter.middleware, hold],
        )
        tasks = []
        for _ in range(3):
            tasks.append(asyncio.create_task(built.run(QUESTION)))
            await asyncio.wait_for(hold.reached.get(), 5)
        hold.release.set()
        await asyncio.gather(*tasks)

    with tenant_scope("acme"):
        asyncio.run(three())

    capped = {semconv.RUN_STOP_REASON: "recursion_limit", semconv.TENANT_ID: "acme"}
    assert telemetry.value(semconv.STOP_REASONS.name, capped) == 2
    abandoned = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "abandoned"}
    assert telemetry.value(semconv.AGENT_RUNS.name, abandoned) == 1
    reasons = [
        (s.attributes or {}).get(semconv.RUN_STOP_REASON)
        for s in telemetry.spans()
        if s.name == "invoke_agent helper"
    ]
    assert sorted(map(str, reasons)) == ["None", "recursion_limit", "recursion_limit"]
    assert adapter.open_runs == 0
