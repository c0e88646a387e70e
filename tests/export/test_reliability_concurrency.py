"""Concurrency and cardinality: many runs at once never mix, and label sets stay bounded."""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    FabricationDetectedEvent,
    LLMEndEvent,
    ReactLoopEndEvent,
)
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.testing.telemetry import InMemoryTelemetry

ASYNC_RUNS = 1000
THREADS = 8
RUNS_PER_THREAD = 50


async def _async_run(handler: OTelCallbackHandler, run_id: str, tenant: str) -> None:
    with tenant_scope(tenant):
        await handler.on_agent_start(AgentStartEvent(query="q", run_id=run_id))
    for iteration in range(2):
        await asyncio.sleep(0)  # interleave with every other run
        await handler.on_llm_end(
            LLMEndEvent(
                model="gpt-4o",
                output="",
                usage={"input_tokens": 3},
                run_id=run_id,
                node_name="react",
                duration_ms=1.0,
                iteration_index=iteration,
            )
        )
    await handler.on_react_loop_end(
        ReactLoopEndEvent(run_id, 1, "NoneType", False, 0, "no_content_no_tool_calls")
    )
    await asyncio.sleep(0)
    await handler.on_agent_end(AgentEndEvent(run_id, "", 2.0, 2))


def _sync_run(handler: OTelCallbackHandler, run_id: str, tenant: str) -> None:
    with tenant_scope(tenant):
        handler.agent_start(AgentStartEvent(query="q", run_id=run_id))
    for iteration in range(2):
        handler.llm_end(
            LLMEndEvent(
                model="claude-sonnet-4-5",
                output="x",
                usage={},
                run_id=run_id,
                node_name="react",
                duration_ms=1.0,
                iteration_index=iteration,
            )
        )
    handler.agent_end(AgentEndEvent(run_id, "x", 2.0, 2))


def test_thousand_async_runs_and_eight_threads(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    expected_tenant: dict[str, str] = {}

    def thread_main(thread_index: int) -> None:
        for i in range(RUNS_PER_THREAD):
            run_id = f"sync-{thread_index}-{i}"
            _sync_run(handler, run_id, expected_tenant[run_id])

    for t in range(THREADS):
        for i in range(RUNS_PER_THREAD):
            expected_tenant[f"sync-{t}-{i}"] = f"thread-tenant-{t}"
    for i in range(ASYNC_RUNS):
        expected_tenant[f"async-{i}"] = f"async-tenant-{i % 7}"

    threads = [threading.Thread(target=thread_main, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()

    async def all_async() -> None:
        await asyncio.gather(
            *(
                _async_run(handler, f"async-{i}", expected_tenant[f"async-{i}"])
                for i in range(ASYNC_RUNS)
            )
        )

    asyncio.run(all_async())
    for thread in threads:
        thread.join()

    assert handler.open_runs == 0
    spans = telemetry.spans()
    runs = {s.context.span_id: s for s in spans if s.name.startswith("invoke_agent")}
    assert len(runs) == ASYNC_RUNS + THREADS * RUNS_PER_THREAD
    chats_per_run: dict[str, int] = defaultdict(int)
    for span in spans:
        if not span.name.startswith("chat"):
            continue
        assert span.parent is not None
        run = runs[span.parent.span_id]
        attrs = span.attributes or {}
        run_attrs = run.attributes or {}
        assert span.context.trace_id == run.context.trace_id
        assert attrs["symfonic.run.id"] == run_attrs["symfonic.run.id"]
        assert attrs["tenant.id"] == expected_tenant[str(run_attrs["symfonic.run.id"])]
        chats_per_run[str(run_attrs["symfonic.run.id"])] += 1
    assert set(chats_per_run.values()) == {2}
    assert len(chats_per_run) == len(runs)
    for run in runs.values():
        attrs = run.attributes or {}
        assert attrs["tenant.id"] == expected_tenant[str(attrs["symfonic.run.id"])]
    assert len({s.context.trace_id for s in runs.values()}) == len(runs)
    assert telemetry.value("symfonic.react.silent_bails") == ASYNC_RUNS
    assert telemetry.value("symfonic.agent.active_runs") == 0


def test_ten_thousand_tenants_and_arbitrary_node_names_stay_bounded(
    telemetry: InMemoryTelemetry,
) -> None:
    max_tenants = 50
    handler = telemetry.handler(max_tenants=max_tenants)
    for i in range(10_000):
        run_id = f"r{i}"
        with tenant_scope(f"tenant-{i}"):
            handler.agent_start(AgentStartEvent(query="q", run_id=run_id))
        handler.llm_end(
            LLMEndEvent(
                model=f"model-{i % 300}",
                output="",
                usage={"input_tokens": 1},
                run_id=run_id,
                node_name=f"node-{i}",
            )
        )
        handler.react_loop_end(
            ReactLoopEndEvent(run_id, 0, "str", False, 0, "no_content_no_tool_calls")
        )
        handler.fabrication_detected(
            FabricationDetectedEvent(run_id, "observe", "observed", [], 0.8, 0.5, "", None, False)
        )
        handler.agent_end(AgentEndEvent(run_id, "", 1.0, 1))

    tenants = {a["tenant.id"] for a, _ in telemetry.points("symfonic.agent.runs")}
    assert len(tenants) == max_tenants + 1
    assert semconv.OVERFLOW_VALUE in tenants
    nodes = {
        a["symfonic.node.name"] for a, _ in telemetry.points("gen_ai.client.operation.duration")
    }
    assert semconv.OTHER_VALUE in nodes
    assert len(nodes) <= 33
    models = {a["gen_ai.request.model"] for a, _ in telemetry.points("symfonic.llm.cost.usd")}
    assert len(models) <= 201
    # Every instrument: series <= (max_tenants + 1) x its small fixed label combinations.
    fixed_combinations = {
        "symfonic.agent.runs": 1,  # one outcome, one empty value here
        "symfonic.react.silent_bails": 1,
        "symfonic.fabrication.detections": 1,
        "gen_ai.invoke_agent.duration": 1,
        "symfonic.react.iterations": 1,
    }
    for name, combos in fixed_combinations.items():
        assert len(telemetry.points(name)) <= (max_tenants + 1) * combos, name
    assert len(telemetry.points("symfonic.fabrication.max_confidence")) == 1
    assert telemetry.value("symfonic.agent.runs") == 10_000
