"""Benchmark 1: a LangChain turn (a ReAct RunnableLambda, LangGraph's agent), sync and async."""

from __future__ import annotations

import asyncio
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import Row, _measure, _ratio, added
from workloads import (
    BASELINE,
    MINIMUM,
    OPENLLMETRY,
    WORKLOADS,
    CyclingChatModel,
    Sdk,
    Subject,
    langchain_subjects,
    minimum_plan,
)


def _spans_per_turn(subject: Subject, build: Any, payload: Any, mode: str) -> int:
    """Spans one turn produces for a subject, counted on a separate in-memory setup."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sdk = Sdk(provider, Sdk.realistic().meter_provider)
    runnable = build(CyclingChatModel())
    config = {"callbacks": subject.make(sdk)}
    if mode == "invoke":
        runnable.invoke(payload, config=config)
    else:
        asyncio.run(runnable.ainvoke(payload, config=config))
    sdk.shutdown()
    return len(exporter.get_finished_spans())


def langchain_path(
    rounds: int,
    per_slice: int,
    loop: asyncio.AbstractEventLoop,
    workloads: list[str] | None = None,
) -> list[Row]:
    rows: list[Row] = []
    for workload, (build, payload) in WORKLOADS.items():
        if workloads is not None and workload not in workloads:
            continue
        plan = minimum_plan(build, payload)
        print(f"{workload}: our telemetry per turn, replayed by the SDK minimum: {plan.describe()}")
        subjects = langchain_subjects(plan)
        for mode in ("invoke", "ainvoke"):
            timings = _measure(subjects, build, payload, mode, loop, rounds, per_slice)
            minimum = sum(added(timings, MINIMUM, BASELINE)[:2])
            peer = None
            if OPENLLMETRY in timings:
                peer = sum(added(timings, OPENLLMETRY, BASELINE)[:2])
            base = timings[BASELINE]
            rows.append(
                Row(
                    workload,
                    mode,
                    BASELINE,
                    "0",
                    statistics.median(base.turn),
                    0.0,
                    statistics.median(base.wall),
                )
            )
            for subject in subjects[1:]:
                hot, deferred, wall = added(timings, subject.name, BASELINE)
                rows.append(
                    Row(
                        workload,
                        mode,
                        subject.name,
                        str(_spans_per_turn(subject, build, payload, mode)),
                        hot,
                        deferred,
                        wall,
                        _ratio(hot + deferred, minimum),
                        _ratio(hot + deferred, peer),
                    )
                )
        for subject in subjects:
            subject.sdk.shutdown()
    return rows
