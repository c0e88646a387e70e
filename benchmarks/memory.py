"""Benchmark 4: memory: RSS growth and retained objects over many runs."""

from __future__ import annotations

import asyncio
import gc
import os
import resource
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from events_path import _five_events
from workloads import (
    OURS,
    WORKLOADS,
    CyclingChatModel,
    Sdk,
    langchain_subjects,
    next_run_id,
)

from symfonic_otel import OTelCallbackHandler


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: peak RSS is the best the standard library offers
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _settle(sdk: Sdk) -> tuple[int, int]:
    sdk.collect()
    sdk.tracer_provider.force_flush()
    gc.collect()
    return _rss_bytes(), len(gc.get_objects())


def memory(runs: int, langchain_runs: int, loop: asyncio.AbstractEventLoop) -> list[str]:
    lines: list[str] = []
    sdk = Sdk.realistic()
    handler = OTelCallbackHandler(
        tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider
    )

    def five(n: int) -> None:
        for _ in range(n):
            start, llm, loop_end, fabrication, end = _five_events(next_run_id())
            handler.agent_start(start)
            handler.llm_end(llm)
            handler.react_loop_end(loop_end)
            handler.fabrication_detected(fabrication)
            handler.agent_end(end)

    five(5_000)  # warm caches, label sets, SDK series and the processor's queue
    rss0, objects0 = _settle(sdk)
    five(runs)
    rss1, objects1 = _settle(sdk)
    lines.append(
        f"events path, {runs:,} runs: RSS growth {(rss1 - rss0) / 2**20:+.2f} MB, "
        f"retained objects {objects1 - objects0:+,} ({(objects1 - objects0) / runs:+.4f}/run), "
        f"open runs after {handler.open_runs}"
    )
    sdk.shutdown()

    for subject in langchain_subjects():
        if subject.name != OURS:
            subject.sdk.shutdown()
            continue
        runnable = WORKLOADS["ReAct turn (RunnableLambda)"][0](CyclingChatModel())
        payload = WORKLOADS["ReAct turn (RunnableLambda)"][1]
        config = {"callbacks": subject.callbacks}
        for _ in range(1_000):
            runnable.invoke(payload, config=config)
        rss0, objects0 = _settle(subject.sdk)
        for _ in range(langchain_runs):
            runnable.invoke(payload, config=config)
        rss1, objects1 = _settle(subject.sdk)
        adapter: Any = subject.callbacks[0]
        state = adapter.tracked_runs + adapter.tracked_calls
        lines.append(
            f"LangChain path, {langchain_runs:,} turns: RSS growth {(rss1 - rss0) / 2**20:+.2f} MB,"
            f" retained objects {objects1 - objects0:+,} "
            f"({(objects1 - objects0) / langchain_runs:+.4f}/turn), open runs after "
            f"{adapter.handler.open_runs}, adapter run state entries {state}"
        )
        subject.sdk.shutdown()
    return lines
