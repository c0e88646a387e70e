"""Overhead benchmark of symfonic-otel against the SDK's own minimum and the peers.

    python benchmarks/run.py            # full run (a few minutes)
    python benchmarks/run.py --quick    # smoke run (well under a minute)
    python benchmarks/run.py --react    # only the ReAct turn (LangChain path), repeatable
    python benchmarks/run.py --langgraph  # only the LangGraph prebuilt agent's turn
    python benchmarks/run.py --profile  # cProfile of the hot paths instead of the benchmark
    python benchmarks/run.py --split    # the ReAct turn: spans and our Python vs metric work
    python benchmarks/run.py --tenants 10,100,1000,10000  # cost per tenant count (tenants.py)
    python benchmarks/run.py --churn 10000,50000,100000,300000  # tenants come and go (churn.py)
    python benchmarks/run.py --retention  # outcome retention: cost, exported bytes, held memory
    python benchmarks/run.py --loops    # loop tracking: cost per turn, series (loop_tracking.py)

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

This file only parses the command line and dispatches: one module per benchmark
(``langchain_path.py``, ``split_path.py``, ``events_path.py``, ``loop_overhead.py``,
``memory.py``, ``profiling.py``, ``tenants.py``, ``churn.py``, ``retention.py``), the shared
measurement and table in ``measure.py``. A new benchmark: a module with a
``main(args) -> int``, one flag in ``build_parser`` and one entry in ``MODES``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def parse_counts(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
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
        help="only tenants coming and going (benchmarks/churn.py): tenants ever seen at each "
        "step, e.g. 10000,50000,100000,300000 (1,000 active)",
    )
    parser.add_argument(
        "--retention",
        action="store_true",
        help="only outcome retention (retention.py): cost per turn at ratios 1.0, 0.1 and 0.01 "
        "side by side, spans and bytes exported per 1,000 runs, memory held at 10,000 open runs",
    )
    parser.add_argument(
        "--loops",
        action="store_true",
        help="only loop tracking (benchmarks/loop_tracking.py): its added cost per turn and the "
        "exposition's series at 10,000 tenants",
    )
    return parser


def _retention(args: argparse.Namespace) -> int:
    import retention

    return retention.main(args)


def _loops(args: argparse.Namespace) -> int:
    import loop_tracking

    return loop_tracking.main(args.quick)


def _churn(args: argparse.Namespace) -> int:
    import churn

    churn.print_table(churn.run(parse_counts(args.churn), active=1_000))
    return 0


def _tenants(args: argparse.Namespace) -> int:
    import tenants

    tenants.print_table(tenants.run_counts(parse_counts(args.tenants), runs=3))
    return 0


def _profile(args: argparse.Namespace) -> int:
    import profiling

    profiling.profile(2_000)
    return 0


def _split(args: argparse.Namespace) -> int:
    import split_path

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    for _ in range(max(args.repeat, 1)):
        for line in split_path.split_path(rounds(args), args.per_slice, loop):
            print(line)
    loop.close()
    return 0


def _overhead(args: argparse.Namespace) -> int:
    import overhead

    return overhead.main(args, rounds(args))


def rounds(args: argparse.Namespace) -> int:
    return int(args.rounds or (6 if args.quick else 12))


# The modes, first match wins; the overhead benchmark (every section) when no flag picks one.
MODES: list[tuple[str, Callable[[argparse.Namespace], int]]] = [
    ("churn", _churn),
    ("tenants", _tenants),
    ("profile", _profile),
    ("split", _split),
    ("retention", _retention),
    ("loops", _loops),
]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # As before the split: only the LangChain-path modes are seeded.
    if not (args.tenants or args.churn):
        random.seed(args.seed)
        from workloads import PEER_CAPTURE

        PEER_CAPTURE["on"] = args.peer_defaults
    for flag, run in MODES:
        if getattr(args, flag):
            return run(args)
    return _overhead(args)


if __name__ == "__main__":
    raise SystemExit(main())
