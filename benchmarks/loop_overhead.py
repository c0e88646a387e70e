"""Benchmark 3: the reference ReactAgent's overhead vs LangGraph's prebuilt agent."""

from __future__ import annotations

import asyncio
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import Row, Slice, _ratio, added, interleave
from workloads import (
    TOOLS,
    CyclingChatModel,
    langgraph_agent,
)

from symfonic_otel.agent import ReactAgent


def loop_overhead(rounds: int, per_slice: int, loop: asyncio.AbstractEventLoop) -> list[Row]:
    """Per-turn time minus the model and tool work (3 zero-latency model calls, 2 tool calls)."""
    work_model = CyclingChatModel()
    bound = work_model.bind_tools(list(TOOLS))
    tools = {t.name: t for t in TOOLS}
    reference = ReactAgent(CyclingChatModel(), list(TOOLS))
    graph = langgraph_agent(CyclingChatModel())
    payload = {"messages": [("user", "How did revenue grow?")]}
    from langchain_core.messages import HumanMessage

    async def work(n: int) -> None:
        for _ in range(n):
            messages: list[Any] = [HumanMessage("How did revenue grow?")]
            for _ in range(3):
                answer = await bound.ainvoke(messages)
                messages.append(answer)
                for call in answer.tool_calls:
                    result = await tools[call["name"]].ainvoke({**call, "type": "tool_call"})
                    messages.append(result)

    async def ref(n: int) -> None:
        for _ in range(n):
            await reference.run("How did revenue grow?")

    async def lg(n: int) -> None:
        for _ in range(n):
            await graph.ainvoke(payload)

    slices: dict[str, Slice] = {
        "model + tool work only": lambda n: loop.run_until_complete(work(n)),
        "reference ReactAgent": lambda n: loop.run_until_complete(ref(n)),
        "LangGraph prebuilt agent": lambda n: loop.run_until_complete(lg(n)),
    }
    timings = interleave(
        slices, dict.fromkeys(slices, lambda: None), rounds=rounds, per_slice=per_slice
    )
    base = "model + tool work only"
    lg_hot = added(timings, "LangGraph prebuilt agent", base)[0]
    rows = [
        Row(
            "agent loop overhead",
            "ainvoke",
            base,
            "-",
            statistics.median(timings[base].turn),
            0.0,
            statistics.median(timings[base].wall),
        )
    ]
    for name in ("LangGraph prebuilt agent", "reference ReactAgent"):
        hot, _, wall = added(timings, name, base)
        rows.append(
            Row(
                "agent loop overhead",
                "ainvoke",
                name,
                "-",
                hot,
                0.0,
                wall,
                None,
                _ratio(hot, lg_hot),
            )
        )
    return rows
