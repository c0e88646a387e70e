"""Overhead benchmark of symfonic-otel against the SDK's own minimum and the peers.

    python benchmarks/run.py            # full run (a few minutes)
    python benchmarks/run.py --quick    # smoke run (well under a minute)
    python benchmarks/run.py --react    # only the ReAct turn (LangChain path), repeatable
    python benchmarks/run.py --langgraph  # only the LangGraph prebuilt agent's turn
    python benchmarks/run.py --profile  # cProfile of the hot paths instead of the benchmark
    python benchmarks/run.py --split    # the ReAct turn: spans and our Python vs metric work
    python benchmarks/run.py --tenants 10,100,1000,10000  # cost per tenant count (tenants.py)

The reference is the *SDK minimum* (``minimum.py``): a subject that makes exactly our telemetry
(the same spans with the same attributes, the same histogram records and counter adds with the
same attribute sets) through the SDK with no logic at all, replayed from what our handler made
on a spy SDK. Every subject runs with content capture off (OpenLLMetry's is on by default;
``--peer-defaults`` measures the peers with their own defaults).

Method: all subjects live in one process and are measured in small interleaved slices (the
subject order is shuffled every round), each slice next to the uninstrumented baseline of the
same round, so drift (CPU frequency, GC, the span processor's thread) hits every subject alike.
"Added" is the median over rounds of (subject - baseline) per turn. After each slice a metric
collection runs outside the timed region and is timed on its own: the cost of measurements
deferred to collection time is reported as "deferred", so nothing is hidden by deferral.
The peers (OpenLLMetry, OpenInference) are measured when installed (``pip install -e .[bench]``).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import os
import pstats
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from langchain_core.callbacks import BaseCallbackHandler
from minimum import Plan, Replay, SdkMinimum, discover
from opentelemetry.metrics import NoOpMeter, NoOpMeterProvider
from workloads import (
    BASELINE,
    MINIMUM,
    OPENLLMETRY,
    OURS,
    PEER_CAPTURE,
    SETUP_DESCRIPTION,
    TOOLS,
    WORKLOADS,
    CyclingChatModel,
    Sdk,
    Subject,
    langchain_subjects,
    langgraph_agent,
    minimum_plan,
    next_run_id,
)

from symfonic_otel import OTelCallbackHandler
from symfonic_otel.agent import ReactAgent
from symfonic_otel.emit.recorder import recorder_for
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    FabricationDetectedEvent,
    LLMEndEvent,
    ReactLoopEndEvent,
)

Slice = Callable[[int], None]


@dataclass
class Timing:
    """Per-round µs per turn of one subject: the timed slice and the collection after it."""

    turn: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    collect: list[float] = field(default_factory=list)


def interleave(
    slices: dict[str, Slice],
    collects: dict[str, Callable[[], None]],
    *,
    rounds: int,
    per_slice: int,
) -> dict[str, Timing]:
    timings = {name: Timing() for name in slices}
    names = list(slices)
    for round_index in range(rounds + 1):  # round 0 warms up and is discarded
        random.shuffle(names)
        for name in names:
            start, wall_start = time.process_time(), time.perf_counter()
            slices[name](per_slice)
            elapsed, wall = time.process_time() - start, time.perf_counter() - wall_start
            collect_start = time.process_time()
            collects[name]()
            collect_elapsed = time.process_time() - collect_start
            if round_index:
                timings[name].turn.append(elapsed / per_slice * 1e6)
                timings[name].wall.append(wall / per_slice * 1e6)
                timings[name].collect.append(collect_elapsed / per_slice * 1e6)
    return timings


def _delta(subject: list[float], base: list[float]) -> float:
    return statistics.median(s - b for s, b in zip(subject, base, strict=True))


def added(timings: dict[str, Timing], name: str, baseline: str) -> tuple[float, float, float]:
    """(CPU µs, deferred CPU µs, wall µs) per turn above ``baseline``: medians of per-round
    deltas. CPU time of the whole process (every thread: the span processor's too) is the
    primary measure because it is not inflated by other processes on a busy machine; wall time
    is shown too, as it also counts waits such as langchain-core's thread-pool hops."""
    subject, base = timings[name], timings[baseline]
    return (
        _delta(subject.turn, base.turn),
        max(_delta(subject.collect, base.collect), 0.0),
        _delta(subject.wall, base.wall),
    )


@dataclass
class Row:
    section: str
    mode: str
    subject: str
    spans: str
    hot: float
    deferred: float
    wall: float
    min_ratio: float | None = None
    peer_ratio: float | None = None


def _ratio(value: float, reference: float | None) -> float | None:
    return value / reference if reference and reference > 0 else None


# --- 1. LangChain path ------------------------------------------------------------------------


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


def _slices(
    subjects: list[Subject],
    runnables: dict[str, Any],
    payload: Any,
    mode: str,
    loop: asyncio.AbstractEventLoop,
) -> dict[str, Slice]:
    """One slice function per subject: ``n`` turns of its own runnable, sync or async."""
    slices: dict[str, Slice] = {}
    for subject in subjects:
        runnable = runnables[subject.name]
        config = {"callbacks": subject.callbacks}
        if mode == "invoke":

            def run_sync(n: int, r: Any = runnable, c: Any = config, p: Any = payload) -> None:
                for _ in range(n):
                    r.invoke(p, config=c)

            slices[subject.name] = run_sync
        else:

            async def many(n: int, r: Any, c: Any, p: Any) -> None:
                for _ in range(n):
                    await r.ainvoke(p, config=c)

            def run_async(n: int, r: Any = runnable, c: Any = config, p: Any = payload) -> None:
                loop.run_until_complete(many(n, r, c, p))

            slices[subject.name] = run_async
    return slices


def _measure(
    subjects: list[Subject],
    build: Any,
    payload: Any,
    mode: str,
    loop: asyncio.AbstractEventLoop,
    rounds: int,
    per_slice: int,
) -> dict[str, Timing]:
    runnables = {s.name: build(CyclingChatModel()) for s in subjects}
    slices = _slices(subjects, runnables, payload, mode, loop)
    collects = {s.name: s.sdk.collect for s in subjects}
    return interleave(slices, collects, rounds=rounds, per_slice=per_slice)


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


# --- 1b. where the LangChain path's cost goes: spans vs metric work ---------------------------

MINIMUM_SPANS = "SDK minimum, spans only"
OURS_NO_METER = "LangChainCallbackHandler, no-op meter"


class _NoOpMeters(NoOpMeterProvider):
    """One no-op meter for every caller; its collection drains our handler's queue (as the
    SDK's would), so queued values are applied, not left to pile up to the queue's cap."""

    def __init__(self) -> None:
        self._meter = NoOpMeter("benchmark")

    def get_meter(self, name: str, *args: Any, **kwargs: Any) -> NoOpMeter:
        return self._meter

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        recorder_for(self._meter).collect()
        return True

    def shutdown(self) -> None:
        self.force_flush()


def _no_meter_sdk() -> Sdk:
    sdk = Sdk.realistic()
    sdk.meter_provider.shutdown()
    return Sdk(sdk.tracer_provider, _NoOpMeters())  # type: ignore[arg-type]


def _ours_without_meter(sdk: Sdk) -> list[BaseCallbackHandler]:
    """Our handler with the real tracer and a no-op meter: all of our Python runs (metric
    bookkeeping included), only the SDK's metric work is gone."""
    from symfonic_otel import LangChainCallbackHandler

    return [
        LangChainCallbackHandler(
            tracer_provider=sdk.tracer_provider,
            meter_provider=sdk.meter_provider,
            capture_content=False,
        )
    ]


def split_path(rounds: int, per_slice: int, loop: asyncio.AbstractEventLoop) -> list[str]:
    """The ReAct turn measured twice over: the full telemetry, and the spans alone (the SDK
    minimum's plan without its measurements, our handler on a no-op meter). The difference of
    the two is each subject's metric work; what our spans-only row costs above the minimum's
    is our own Python."""
    workload = "ReAct turn (RunnableLambda)"
    build, payload = WORKLOADS[workload]
    plan = minimum_plan(build, payload)
    spans_plan = replace(plan, steps=tuple(replace(step, records=()) for step in plan.steps))
    subjects = []
    for subject in langchain_subjects(plan):
        if subject.name in (BASELINE, MINIMUM, OURS):
            subjects.append(subject)
        else:
            subject.sdk.shutdown()
    subjects += [
        Subject(
            MINIMUM_SPANS,
            lambda sdk: [SdkMinimum(sdk.tracer_provider, sdk.meter_provider, spans_plan)],
        ).build(),
        Subject(OURS_NO_METER, _ours_without_meter, _no_meter_sdk()).build(),
    ]
    lines = [f"{workload}, CPU µs per turn above the baseline (deferred work included):"]
    for mode in ("invoke", "ainvoke"):
        timings = _measure(subjects, build, payload, mode, loop, rounds, per_slice)
        cost = {s.name: sum(added(timings, s.name, BASELINE)[:2]) for s in subjects[1:]}
        spans_min, spans_ours = cost[MINIMUM_SPANS], cost[OURS_NO_METER]
        metrics_min, metrics_ours = cost[MINIMUM] - spans_min, cost[OURS] - spans_ours
        lines.append(
            f"  {mode}: all: minimum {cost[MINIMUM]:,.0f}, ours {cost[OURS]:,.0f} "
            f"({_fmt(_ratio(cost[OURS], cost[MINIMUM]))}); spans and our Python: minimum "
            f"{spans_min:,.0f}, ours {spans_ours:,.0f} ({_fmt(_ratio(spans_ours, spans_min))}); "
            f"metric work: minimum {metrics_min:,.0f}, ours {metrics_ours:,.0f} "
            f"({_fmt(_ratio(metrics_ours, metrics_min))}); our Python above the SDK: "
            f"{spans_ours - spans_min:,.0f}; for 1.15x it must be under "
            f"{1.15 * cost[MINIMUM] - metrics_ours - spans_min:,.0f}"
        )
    for subject in subjects:
        subject.sdk.shutdown()
    return lines


# --- 2. events path ---------------------------------------------------------------------------

_STARTED_AT = "2025-06-01T12:00:00.000000+00:00"


def _five_events(run_id: str) -> tuple[Any, ...]:
    return (
        AgentStartEvent(query="How did revenue grow?", run_id=run_id),
        LLMEndEvent(
            model="gpt-4o-mini",
            output="",
            usage={"input_tokens": 420, "output_tokens": 48},
            run_id=run_id,
            node_name="react",
            duration_ms=850.0,
            started_at_utc=_STARTED_AT,
            iteration_index=0,
        ),
        ReactLoopEndEvent(
            run_id=run_id,
            iteration_index=0,
            content_type="str",
            has_tool_calls=True,
            tool_call_count=1,
            termination_reason="tool_calls_with_no_text",
        ),
        FabricationDetectedEvent(
            run_id=run_id,
            mode="observe",
            action_taken="observed",
            findings=[{"kind": "unsupported_number", "claim": "42%", "confidence": 0.7}],
            refuse_threshold=0.8,
            max_finding_confidence=0.7,
            original_draft_preview="",
            replacement_preview=None,
            preview_truncated=False,
        ),
        AgentEndEvent(run_id=run_id, final_response="", duration_ms=900.0, node_count=2),
    )


def _five_calls(handler: OTelCallbackHandler, step: Any = None) -> Callable[[str], None]:
    """One run's five events through ``handler`` (with ``step()`` after each, for discovery)."""

    def run(run_id: str) -> None:
        start, llm, loop_end, fabrication, end = _five_events(run_id)
        for method, event in (
            (handler.agent_start, start),
            (handler.llm_end, llm),
            (handler.react_loop_end, loop_end),
            (handler.fabrication_detected, fabrication),
            (handler.agent_end, end),
        ):
            method(event)
            if step is not None:
                step()

    return run


def events_plan() -> Plan:
    """What ``OTelCallbackHandler`` makes of the five events, for the SDK minimum to replay."""

    def make(sdk: Any) -> OTelCallbackHandler:
        return OTelCallbackHandler(
            tracer_provider=sdk.tracer_provider,
            meter_provider=sdk.meter_provider,
            capture_content=False,
        )

    def turn(handler: OTelCallbackHandler, step: Callable[[], None]) -> None:
        _five_calls(handler, step)(next_run_id())

    return discover(make, turn)


EVENTS_MINIMUM = "SDK minimum, same telemetry"


def _events_slices(ours: OTelCallbackHandler, replay: Replay) -> dict[str, Slice]:
    step = replay.step

    def none(n: int) -> None:
        for _ in range(n):
            _five_events(next_run_id())

    def minimum(n: int) -> None:
        for _ in range(n):
            _five_events(next_run_id())
            step()
            step()
            step()
            step()
            step()

    def symfonic(n: int) -> None:
        handler = ours
        for _ in range(n):
            start, llm, loop_end, fabrication, end = _five_events(next_run_id())
            handler.agent_start(start)
            handler.llm_end(llm)
            handler.react_loop_end(loop_end)
            handler.fabrication_detected(fabrication)
            handler.agent_end(end)

    return {BASELINE: none, EVENTS_MINIMUM: minimum, "OTelCallbackHandler": symfonic}


def events_path(rounds: int, per_slice: int) -> list[Row]:
    plan = events_plan()
    print(f"five events: our telemetry per run, replayed by the SDK minimum: {plan.describe()}")
    sdks = {name: Sdk.realistic() for name in (BASELINE, EVENTS_MINIMUM, "OTelCallbackHandler")}
    ours = OTelCallbackHandler(
        tracer_provider=sdks["OTelCallbackHandler"].tracer_provider,
        meter_provider=sdks["OTelCallbackHandler"].meter_provider,
        capture_content=False,
    )
    replay = Replay(sdks[EVENTS_MINIMUM].tracer_provider, sdks[EVENTS_MINIMUM].meter_provider, plan)
    slices = _events_slices(ours, replay)
    collects = {name: sdk.collect for name, sdk in sdks.items()}
    timings = interleave(slices, collects, rounds=rounds, per_slice=per_slice)
    minimum = sum(added(timings, EVENTS_MINIMUM, BASELINE)[:2])
    base = timings[BASELINE]
    rows = [
        Row(
            "5 events of one run",
            "sync",
            "events only",
            "0",
            statistics.median(base.turn),
            0.0,
            statistics.median(base.wall),
        )
    ]
    spans = str(plan.span_count)
    for name in (EVENTS_MINIMUM, "OTelCallbackHandler"):
        hot, deferred, wall = added(timings, name, BASELINE)
        rows.append(
            Row(
                "5 events of one run",
                "sync",
                name,
                spans,
                hot,
                deferred,
                wall,
                _ratio(hot + deferred, minimum),
            )
        )
    for sdk in sdks.values():
        sdk.shutdown()
    return rows


# --- 3. reference loop vs LangGraph's prebuilt agent ------------------------------------------


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


# --- 4. memory --------------------------------------------------------------------------------


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


# --- output -----------------------------------------------------------------------------------


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}x"


def print_table(rows: list[Row]) -> None:
    header = (
        f"| {'section':<28} | {'mode':<7} | {'subject':<27} | {'spans':>5} | "
        f"{'added CPU µs':>12} | {'deferred µs':>11} | {'added wall µs':>13} | "
        f"{'vs min':>8} | {'vs peer':>8} |"
    )
    print(header)
    print("|" + "|".join("-" * (len(cell) + 0) for cell in header.split("|")[1:-1]) + "|")
    for row in rows:
        base = row.subject in (BASELINE, "events only", "model + tool work only")
        hot = f"({row.hot:,.0f})" if base else f"{row.hot:,.0f}"
        wall = f"({row.wall:,.0f})" if base else f"{row.wall:,.0f}"
        print(
            f"| {row.section:<28} | {row.mode:<7} | {row.subject:<27} | {row.spans:>5} | "
            f"{hot:>12} | {row.deferred:>11,.0f} | {wall:>13} | {_fmt(row.min_ratio):>8} | "
            f"{_fmt(row.peer_ratio):>8} |"
        )


def summary(rows: list[Row]) -> str:
    parts: list[str] = []
    for row in rows:
        if row.subject == OURS:
            text = f"{row.section.split(' ')[0]} {row.mode}: {_fmt(row.min_ratio)} SDK minimum"
            if row.peer_ratio is not None:
                text += f", {_fmt(row.peer_ratio)} OpenLLMetry"
            parts.append(text)
        elif row.subject == "OTelCallbackHandler":
            parts.append(f"events: {_fmt(row.min_ratio)} SDK minimum")
        elif row.subject == "reference ReactAgent":
            parts.append(f"reference loop: {_fmt(row.peer_ratio)} LangGraph's overhead")
    return "ratios (added CPU incl. deferred metric work) - " + "; ".join(parts)


def spread(repeats: list[list[Row]]) -> list[str]:
    """Our ratios per workload and mode over the repeats: median and range."""
    lines: list[str] = []
    keys = [(r.section, r.mode) for r in repeats[0] if r.subject == OURS]
    for section, mode in keys:
        ours = [
            r
            for rows in repeats
            for r in rows
            if (r.section, r.mode, r.subject) == (section, mode, OURS)
        ]
        text = f"{section}, {mode}:"
        for label, values in (
            ("vs SDK minimum", [r.min_ratio for r in ours]),
            ("vs OpenLLMetry", [r.peer_ratio for r in ours]),
        ):
            known = sorted(v for v in values if v is not None)
            if known:
                text += (
                    f" {label} {statistics.median(known):.2f}x "
                    f"({known[0]:.2f}-{known[-1]:.2f}, {len(known)} runs);"
                )
        lines.append(text.rstrip(";"))
    return lines


# --- profile ----------------------------------------------------------------------------------


def _profile_turns(subject: Subject, turns: int, title: str) -> None:
    runnable = WORKLOADS["ReAct turn (RunnableLambda)"][0](CyclingChatModel())
    payload = WORKLOADS["ReAct turn (RunnableLambda)"][1]
    config = {"callbacks": subject.callbacks}
    for _ in range(200):
        runnable.invoke(payload, config=config)
    subject.sdk.collect()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(turns):
        runnable.invoke(payload, config=config)
    subject.sdk.collect()
    profiler.disable()
    print(f"== {title}: LangChain ReAct turn x{turns} (incl. one collection), by own time ==")
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(r"symfonic_otel|opentelemetry|minimum", 30)
    print(f"== {title}: by cumulative time, symfonic_otel only ==")
    stats.sort_stats("cumulative").print_stats(r"symfonic_otel", 25)


def profile(turns: int) -> None:
    """cProfile of the ReAct turn with our handler and with the SDK minimum, and the five
    events: what our handler spends beyond the SDK's own work shows as the difference."""
    build, payload = WORKLOADS["ReAct turn (RunnableLambda)"]
    for subject in langchain_subjects(minimum_plan(build, payload)):
        if subject.name in (OURS, MINIMUM):
            _profile_turns(subject, turns, subject.name)
        subject.sdk.shutdown()
    sdk = Sdk.realistic()
    handler = OTelCallbackHandler(
        tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider
    )
    five = _five_calls(handler)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(turns):
        five(next_run_id())
    sdk.collect()
    profiler.disable()
    print(f"== five events x{turns} through OTelCallbackHandler (incl. one collection) ==")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    sdk.shutdown()


def parse_counts(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few rounds: a smoke run")
    parser.add_argument(
        "--react", action="store_true", help="only the ReAct turn (LangChain path), no memory"
    )
    parser.add_argument(
        "--langgraph", action="store_true", help="only the LangGraph agent turn, no memory"
    )
    parser.add_argument("--repeat", type=int, default=1, help="repeat the LangChain section")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 12, quick 6)")
    parser.add_argument("--per-slice", type=int, default=10, help="turns per slice")
    parser.add_argument(
        "--peer-defaults",
        action="store_true",
        help="peers with their default content capture (on) instead of off like ours",
    )
    parser.add_argument("--profile", action="store_true", help="cProfile the hot paths")
    parser.add_argument(
        "--split",
        action="store_true",
        help="the ReAct turn split into spans (and our Python) and metric work",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--tenants",
        metavar="COUNTS",
        help="only the cost per tenant count (benchmarks/tenants.py), e.g. 10,100,1000,10000",
    )
    parser.add_argument(
        "--churn",
        metavar="STEPS",
        help="only tenants coming and going (benchmarks/churn.py), tenants ever seen at each "
        "step, e.g. 10000,50000,100000,300000 (1,000 active)",
    )
    args = parser.parse_args(argv)
    if args.churn:
        import churn

        churn.print_table(churn.run(parse_counts(args.churn), active=1_000))
        return 0
    if args.tenants:
        import tenants

        tenants.print_table(tenants.run_counts(parse_counts(args.tenants), runs=3))
        return 0
    random.seed(args.seed)
    PEER_CAPTURE["on"] = args.peer_defaults
    if args.profile:
        profile(2_000)
        return 0
    rounds = args.rounds or (6 if args.quick else 12)
    per_slice = args.per_slice
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    if args.split:
        for _ in range(max(args.repeat, 1)):
            for line in split_path(rounds, per_slice, loop):
                print(line)
        loop.close()
        return 0
    capture = "ours off, peers on (their default)" if args.peer_defaults else "off everywhere"
    print(f"SDK setup for every subject: {SETUP_DESCRIPTION}; content capture {capture}")
    print(
        f"{rounds} interleaved rounds of {per_slice} turns per subject, "
        f"{args.repeat} repeat(s); python {sys.version.split()[0]}"
    )
    workloads = [
        name
        for name, wanted in (
            ("ReAct turn (RunnableLambda)", args.react),
            ("LangGraph prebuilt agent", args.langgraph),
        )
        if wanted
    ] or None
    only_turns = workloads is not None
    repeats: list[list[Row]] = []
    for index in range(max(args.repeat, 1)):
        if repeats:  # every repeat's table; the last one is printed with the other sections
            print()
            print_table(repeats[-1])
            print()
        if args.repeat > 1:
            print(f"repeat {index + 1} of {args.repeat}:")
        repeats.append(langchain_path(rounds, per_slice, loop, workloads))
    rows = list(repeats[-1])
    if not only_turns:
        rows += events_path(rounds, per_slice * 10)
        rows += loop_overhead(rounds, per_slice, loop)
    print()
    print_table(rows)
    print(
        "added CPU µs: median per-turn process CPU time above the baseline (in brackets: the "
        "baseline itself); deferred µs: metric work done at collection time, per turn (CPU); "
        "added wall µs: the same in wall time; vs min / vs peer: (added + deferred CPU) / the "
        "SDK minimum's, / OpenLLMetry's (loop rows: overhead / LangGraph's overhead)"
    )
    if not only_turns:
        print()
        for line in memory(
            10_000 if args.quick else 100_000, 2_000 if args.quick else 10_000, loop
        ):
            print(line)
    print()
    print(summary(rows))
    if len(repeats) > 1:
        print("spread over the repeats (median, min-max):")
        for line in spread(repeats):
            print(f"  {line}")
    loop.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
