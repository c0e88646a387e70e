"""The default benchmark: the LangChain path, the events path, the reference loop and memory,
printed as one table with the ratios to the SDK minimum and the peers."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from events_path import events_path
from langchain_path import langchain_path
from loop_overhead import loop_overhead
from measure import Row, print_table, spread, summary
from memory import memory
from workloads import SETUP_DESCRIPTION


def main(args: argparse.Namespace, rounds: int) -> int:
    per_slice = args.per_slice
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
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
