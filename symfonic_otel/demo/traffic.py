"""Drive the reference loop over the scenario mix, for several tenants, with a seeded RNG."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from symfonic_otel.agent import ReactAgent
from symfonic_otel.demo.levers import Faults, noisy_tenants
from symfonic_otel.demo.scenarios import (
    TOOLS,
    Behaviour,
    DemoProviderError,
    NoisyKind,
    ScenarioPlan,
    pick_scenario,
)
from symfonic_otel.emit.tenancy import tenant_scope
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.testing.scripted import ScriptedChatModel

__all__ = ["PlannedRun", "Traffic", "plan_runs"]

AGENT_NAME = "support"


@dataclass(frozen=True)
class PlannedRun:
    index: int
    run_id: str
    tenant: str
    behaviour: Behaviour
    plan: ScenarioPlan
    lost_worker: bool
    retried_end: bool


def plan_runs(
    seed: int,
    tenant_names: list[str],
    noisy: Mapping[str, NoisyKind] | None = None,
    misbehaving: Callable[[], bool] = lambda: True,
    faults: Faults | None = None,
) -> Iterator[PlannedRun]:
    """An endless, reproducible sequence of runs: same seed (and noisy period), same runs.

    ``noisy`` maps tenants to how they misbehave (``None``: the default, globex bailing);
    ``misbehaving()`` is asked as each run is planned: once it says no, noisy tenants draw from
    the ordinary mix, so their alerts can resolve. ``faults`` adds lost workers and retried
    ends (see ``levers.Faults``).
    """
    rng = random.Random(seed)
    kinds = noisy_tenants(None, tenant_names) if noisy is None else dict(noisy)
    faults = faults or Faults()
    index = 0
    while True:
        tenant = rng.choice(tenant_names)
        kind = kinds.get(tenant)
        behaviour: Behaviour = kind if kind is not None and misbehaving() else "ordinary"
        plan = pick_scenario(rng, behaviour).build(rng, tenant)
        lost_worker, retried_end = faults.draw(rng)
        yield PlannedRun(
            index=index,
            run_id=f"demo-{seed}-{index:06d}",
            tenant=tenant,
            behaviour=behaviour,
            plan=plan,
            lost_worker=lost_worker,
            retried_end=retried_end,
        )
        index += 1


class Traffic:
    """Runs planned runs through ``ReactAgent`` with ``handler`` as its callback."""

    def __init__(
        self,
        handler: OTelCallbackHandler,
        *,
        concurrency: int = 32,
        on_done: Callable[[PlannedRun], None] = lambda run: None,
    ) -> None:
        self.handler = handler
        self.concurrency = concurrency
        self.on_done = on_done
        self.completed = 0
        self.provider_errors = 0
        self.cancelled = 0

    async def run_count(self, runs: Iterator[PlannedRun], count: int) -> None:
        """Run ``count`` runs, ``concurrency`` at a time, each planned when a worker is free.

        A fixed pool of workers pulls from one iterator, so neither memory nor the time a
        Ctrl-C takes to cancel grows with ``count``: at most ``concurrency`` runs exist at once.
        """
        planned = itertools.islice(runs, count)

        async def worker() -> None:
            # ``next`` is synchronous, so workers on one event loop never race for a run.
            for run in planned:
                await self.one(run)

        async with asyncio.TaskGroup() as group:
            for _ in range(min(self.concurrency, count)):
                group.create_task(worker())

    async def run_for(self, runs: Iterator[PlannedRun], seconds: float, rate: float) -> None:
        """Start runs at a steady ``rate`` per second for ``seconds``."""
        interval = 1.0 / rate
        deadline = time.monotonic() + seconds
        next_start = time.monotonic()
        async with asyncio.TaskGroup() as group:
            for run in runs:
                now = time.monotonic()
                if now >= deadline:
                    break
                if next_start > now:
                    await asyncio.sleep(next_start - now)
                next_start += interval
                group.create_task(self.one(run))

    async def warm_up(self, runs: Iterator[PlannedRun], count: int = 40) -> None:
        """Run a few plans with no telemetry and no latency, one at a time.

        First calls build tool schemas and import lazily loaded modules; done under load they
        would stall the event loop and skew the first measured latencies.
        """
        for _, run in zip(range(count), runs, strict=False):
            plan = run.plan
            model = ScriptedChatModel(plan.script, model_name=plan.model_name)
            agent = ReactAgent(model, TOOLS, config=plan.config, name=AGENT_NAME)
            with contextlib.suppress(DemoProviderError):
                await agent.run(plan.query, run_id=run.run_id)

    async def one(self, run: PlannedRun) -> None:
        plan = run.plan
        model = ScriptedChatModel(plan.script, model_name=plan.model_name, latency_s=plan.latency_s)
        agent = ReactAgent(
            model, TOOLS, config=plan.config, callbacks=[self.handler], name=AGENT_NAME
        )
        with tenant_scope(run.tenant):
            if run.lost_worker:
                # A worker that died mid-run: AgentStart arrives, AgentEnd never does.
                self.handler.agent_start(AgentStartEvent(plan.query, f"{run.run_id}-lost"))
            task = asyncio.create_task(_play(agent, plan.query, run.run_id, stream=_streams(run)))
        try:
            if plan.cancel_after_s is not None:
                await asyncio.sleep(plan.cancel_after_s)
                task.cancel()
            await task
        except DemoProviderError:
            self.provider_errors += 1
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not task.cancelled() or (current is not None and current.cancelling()):
                raise  # the demo itself is being stopped (Ctrl-C), not just this run
            self.cancelled += 1
        if run.retried_end:
            with contextlib.suppress(Exception):
                self.handler.agent_end(AgentEndEvent(run.run_id, None, 0.0, None))
        self.completed += 1
        self.on_done(run)


# Every fifth plain answer or tool round trip is streamed, as a chat UI would: those runs give
# the time-to-first-chunk metric its data and show a completed run whose answer the handler is
# not told (the streaming path's AgentEnd has no final_response).
_STREAMED_SCENARIOS = frozenset({"answer", "tool_round_trip"})


def _streams(run: PlannedRun) -> bool:
    return run.plan.scenario in _STREAMED_SCENARIOS and run.index % 5 == 0


async def _play(agent: ReactAgent, query: str, run_id: str, *, stream: bool) -> None:
    if not stream:
        await agent.run(query, run_id=run_id)
        return
    async for _ in agent.stream(query, run_id=run_id):
        pass
