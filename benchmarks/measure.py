"""Shared by the overhead benchmarks: interleaved slices, per-round deltas, the result table."""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workloads import (
    BASELINE,
    OURS,
    CyclingChatModel,
    Subject,
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
