"""The adapter under async, streaming, batch and thread pools: every run its own, closed trace."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import (
    AGENT_SPAN,
    DetachErrors,
    assert_one_tree_per_run,
    call,
    conversation_agent,
    question,
    react_agent,
    scripted_agent,
    slow,
    tool_turn,
)

RUNS = 8
RUNS_METRIC = semconv.AGENT_RUNS.name


def check_runs(telemetry: InMemoryTelemetry, runs: int = RUNS) -> None:
    assert_one_tree_per_run(telemetry.spans(), runs=runs, chats=2, tools=1)
    assert telemetry.value(RUNS_METRIC, {semconv.RUN_OUTCOME: "completed"}) == runs
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0
    assert telemetry.value(semconv.DROPPED_EVENTS.name) == 0
    assert telemetry.unended_spans == []


async def test_ainvoke_span_tree(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    agent = scripted_agent(tool_turn(), "The sum is 3.")
    result = await agent.ainvoke({"messages": [("user", "1+2")]}, config={"callbacks": [lc]})
    assert result["messages"][-1].content == "The sum is 3."
    check_runs(telemetry, runs=1)


async def test_concurrent_ainvoke(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    agent = conversation_agent()
    results = await asyncio.gather(
        *(agent.ainvoke(question(i), config={"callbacks": [lc]}) for i in range(RUNS))
    )
    assert [r["messages"][-1].content for r in results] == [
        f"The sum is {2 * i + 1}." for i in range(RUNS)
    ]
    check_runs(telemetry)


async def test_abatch(telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler) -> None:
    agent = conversation_agent()
    await agent.abatch([question(i) for i in range(RUNS)], config={"callbacks": [lc]})
    check_runs(telemetry)


def test_batch(telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler) -> None:
    agent = conversation_agent()
    agent.batch(
        [question(i) for i in range(RUNS)], config={"callbacks": [lc], "max_concurrency": RUNS}
    )
    check_runs(telemetry)


def test_thread_pool(telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler) -> None:
    agent = conversation_agent()
    with ThreadPoolExecutor(max_workers=RUNS) as pool:
        list(pool.map(lambda i: agent.invoke(question(i), config={"callbacks": [lc]}), range(RUNS)))
    check_runs(telemetry)


def test_stream(telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler) -> None:
    agent = scripted_agent(tool_turn(), "The sum is 3.")
    chunks = list(agent.stream({"messages": [("user", "1+2")]}, config={"callbacks": [lc]}))
    assert chunks
    check_runs(telemetry, runs=1)


@pytest.mark.parametrize("mode", ["values", "updates", "messages"])
async def test_concurrent_astream(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler, mode: str
) -> None:
    """Streamed model calls (the scripted model streams chunks) in 8 concurrent runs."""

    async def consume(i: int) -> int:
        agent = scripted_agent(tool_turn(i, i), f"The sum is {2 * i}.")
        count = 0
        async for _ in agent.astream(question(i), config={"callbacks": [lc]}, stream_mode=mode):
            count += 1
        return count

    assert all(await asyncio.gather(*(consume(i) for i in range(RUNS))))
    check_runs(telemetry)


async def test_astream_bail_is_detected(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    agent = scripted_agent(tool_turn(), AIMessage(content=""))
    async for _ in agent.astream({"messages": [("user", "1+2")]}, config={"callbacks": [lc]}):
        pass
    assert telemetry.value(semconv.SILENT_BAILS.name) == 1


async def test_callbacks_run_inline_on_the_event_loop(
    telemetry: InMemoryTelemetry, detach_log: DetachErrors
) -> None:
    """No thread-pool hop per callback under ainvoke."""
    threads: set[int] = set()

    class Spy(LangChainCallbackHandler):
        def on_chat_model_start(self, *args: Any, **kwargs: Any) -> Any:
            threads.add(threading.get_ident())
            return super().on_chat_model_start(*args, **kwargs)

        def on_chain_end(self, *args: Any, **kwargs: Any) -> None:
            threads.add(threading.get_ident())
            super().on_chain_end(*args, **kwargs)

    spy = Spy(handler=telemetry.handler())
    await scripted_agent(tool_turn(), "3").ainvoke(
        {"messages": [("user", "1+2")]}, config={"callbacks": [spy]}
    )
    assert threads == {threading.get_ident()}
    check_runs(telemetry, runs=1)


async def test_cancelled_run(telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler) -> None:
    model = ScriptedChatModel([AIMessage("", tool_calls=[call("slow", {"seconds": 30})])])
    agent = react_agent(model, [slow])
    started = asyncio.Event()

    async def run() -> None:
        async for _ in agent.astream({"messages": [("user", "wait")]}, config={"callbacks": [lc]}):
            started.set()

    task = asyncio.create_task(run())
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    root = telemetry.span(AGENT_SPAN)
    assert (root.attributes or {})[semconv.RUN_OUTCOME] == "cancelled"
    assert telemetry.value(RUNS_METRIC, {semconv.RUN_OUTCOME: "cancelled"}) == 1
    assert telemetry.span("execute_tool slow").end_time is not None
    assert telemetry.unended_spans == []


def test_abandoned_stream_is_cancelled(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    """A consumer that stops reading a stream: the run ends (GeneratorExit) as cancelled."""
    agent = scripted_agent(tool_turn(), "The sum is 3.")
    stream = agent.stream({"messages": [("user", "1+2")]}, config={"callbacks": [lc]})
    next(stream)
    stream.close()
    root = telemetry.span(AGENT_SPAN)
    assert (root.attributes or {})[semconv.RUN_OUTCOME] == "cancelled"
    assert telemetry.unended_spans == []
