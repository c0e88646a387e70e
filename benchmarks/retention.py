"""Outcome retention: its cost per turn, what it exports, and what it holds.

    python benchmarks/run.py --retention          # a minute or two
    python benchmarks/run.py --retention --quick  # a smoke run
    python benchmarks/retention.py --rounds 12 --open-runs 10000

Workload: runs played through ``OTelCallbackHandler`` from Symfonic-shaped events; 90 % are a
healthy ReAct turn (two model calls, two tools), 10 % a silent bail recovered by synthesis.
Every subject exports through the same batch processor into an exporter that encodes each batch
as OTLP protobuf (the real encoder, the bytes a collector would receive) and counts spans and
bytes, sending nothing.

* **Cost per turn**: the subjects (no telemetry, today's export = ratio 1.0, retention at 0.1
  and 0.01) run in interleaved slices, the order shuffled each round; a slice ends with a flush,
  inside the timed region, so the export thread's encoding is paid by the subject that caused
  it. CPU is the process's (every thread); "agent thread" is the thread running the turns only
  (what the agent waits for). Reported: the median per turn, and each subject's ratio to today's
  export, side by side from the same run.
* **Exported per 1,000 runs**: spans and OTLP bytes at ratios 1.0, 0.1 and 0.01.
* **Held memory**: ``--open-runs`` runs left open (one ended model call and one ended tool each,
  the run span open), with and without retention; the difference (tracemalloc) is what holding
  costs, next to the processor's own estimate (``held_bytes``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from symfonic_otel import OTelCallbackHandler, OutcomeRetentionSpanProcessor
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    LLMEndEvent,
    ReactLoopEndEvent,
    ToolCallStartEvent,
    ToolResultEvent,
)
from symfonic_otel.export.span_export import DropCountingBatchSpanProcessor

RATIOS = (1.0, 0.1, 0.01)
BAIL_SHARE = 0.1


class CountingExporter(SpanExporter):
    """Encodes each batch as an OTLP request and counts it; sends nothing."""

    def __init__(self) -> None:
        self.spans = 0
        self.bytes = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.bytes += len(encode_spans(spans).SerializeToString())
        self.spans += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def _call(run_id: str, node: str, output: str, index: int) -> LLMEndEvent:
    return LLMEndEvent(
        "gpt-4o",
        output,
        {"input_tokens": 900, "output_tokens": 40},
        run_id=run_id,
        node_name=node,
        duration_ms=200.0,
        iteration_index=index,
    )


def play(handler: Any, run_id: str, bail: bool) -> None:
    """One run as the handler's synchronous API receives it."""
    handler.agent_start(AgentStartEvent("Where is order 4711?", run_id))
    handler.llm_end(_call(run_id, "react", "", 0))
    if bail:
        handler.react_loop_end(
            ReactLoopEndEvent(run_id, 0, "list", True, 1, "tool_calls_with_no_text")
        )
        handler.llm_end(_call(run_id, "react_synthesize_fallback", "It shipped.", 1))
    else:
        for tool in ("search", "orders"):
            handler.tool_call_start(ToolCallStartEvent(f"{run_id}-{tool}", tool, run_id=run_id))
            handler.tool_result(ToolResultEvent(f"{run_id}-{tool}", tool, run_id=run_id))
        handler.llm_end(_call(run_id, "react", "It shipped.", 1))
    handler.agent_end(AgentEndEvent(run_id, "It shipped.", 1500.0, 3))


class _Nothing:
    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


class Subject:
    def __init__(self, name: str, ratio: float | None) -> None:
        self.name = name
        self.exporter = CountingExporter()
        self.provider = TracerProvider()
        self.handler: Any = _Nothing()
        self.retention: OutcomeRetentionSpanProcessor | None = None
        if ratio is None:
            return
        batch = DropCountingBatchSpanProcessor(self.exporter)
        if ratio < 1.0:
            self.retention = OutcomeRetentionSpanProcessor(batch, healthy_trace_ratio=ratio)
            self.provider.add_span_processor(self.retention)
        else:
            self.provider.add_span_processor(batch)
        self.handler = OTelCallbackHandler(
            tracer_provider=self.provider, meter_provider=MeterProvider()
        )
        self.runs = 0

    def slice(self, turns: int, rng: random.Random) -> tuple[float, float]:
        """(process CPU, agent-thread CPU) of ``turns`` runs and the flush after them."""
        gc.collect()
        cpu, thread = time.process_time(), time.thread_time()
        for _ in range(turns):
            self.runs = getattr(self, "runs", 0) + 1
            play(self.handler, f"{self.name}-{self.runs}", rng.random() < BAIL_SHARE)
        thread = time.thread_time() - thread
        self.provider.force_flush()
        return time.process_time() - cpu, thread


def cost(rounds: int, turns: int) -> None:
    subjects = [Subject("none", None), *(Subject(f"r{ratio}", ratio) for ratio in RATIOS)]
    rng = random.Random(7)
    samples: dict[str, list[tuple[float, float]]] = {s.name: [] for s in subjects}
    for subject in subjects:  # warm-up
        subject.slice(turns, rng)
    for _ in range(rounds):
        order = subjects[:]
        rng.shuffle(order)
        for subject in order:
            samples[subject.name].append(subject.slice(turns, rng))
    median = {
        name: (
            statistics.median(c for c, _ in values) / turns * 1e6,
            statistics.median(t for _, t in values) / turns * 1e6,
        )
        for name, values in samples.items()
    }
    base = median["none"]
    today = median["r1.0"]
    print(f"cost per turn ({rounds} rounds x {turns} turns, {BAIL_SHARE:.0%} bails)")
    print(f"{'subject':<22}{'CPU µs':>10}{'x today':>10}{'agent µs':>11}{'x today':>10}")
    for subject in subjects:
        cpu, thread = median[subject.name]
        label = "no telemetry" if subject.retention is None and subject.name == "none" else None
        label = label or (
            "today's export (1.0)" if subject.name == "r1.0" else f"retention {subject.name[1:]}"
        )
        print(
            f"{label:<22}{cpu:>10.1f}{cpu / today[0]:>10.3f}{thread:>11.1f}"
            f"{thread / today[1]:>10.3f}"
        )
    for subject in subjects[2:]:
        cpu, thread = median[subject.name]
        print(
            f"added by telemetry, {subject.name[1:]} over 1.0: CPU "
            f"{(cpu - base[0]) / (today[0] - base[0]):.3f}x, agent thread "
            f"{(thread - base[1]) / (today[1] - base[1]):.3f}x"
        )
    for subject in subjects:
        subject.provider.shutdown()


def exported(runs: int) -> None:
    print(f"\nexported per 1,000 runs ({runs} runs, {BAIL_SHARE:.0%} bails)")
    print(f"{'ratio':<8}{'spans':>10}{'bytes':>12}{'x 1.0':>8}")
    rng = random.Random(11)
    bails = [rng.random() < BAIL_SHARE for _ in range(runs)]
    full = 0.0
    for ratio in RATIOS:
        subject = Subject(f"e{ratio}", ratio)
        for i, bail in enumerate(bails):
            play(subject.handler, f"run-{i}", bail)
        subject.provider.shutdown()
        per = 1000 / runs
        spans, size = subject.exporter.spans * per, subject.exporter.bytes * per
        full = full or size
        print(f"{ratio:<8}{spans:>10.0f}{size:>12.0f}{size / full:>8.3f}")


def held_memory(open_runs: int) -> None:
    print(f"\nheld memory at {open_runs:,} open runs (one model call, one tool ended in each)")
    results = {}
    for ratio in (1.0, 0.01):
        subject = Subject(f"m{ratio}", ratio)
        handler = subject.handler
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        for i in range(open_runs):
            run_id = f"open-{i}"
            handler.agent_start(AgentStartEvent("q", run_id))
            handler.llm_end(_call(run_id, "react", "", 0))
            handler.tool_call_start(ToolCallStartEvent(f"{run_id}-t", "search", run_id=run_id))
            handler.tool_result(ToolResultEvent(f"{run_id}-t", "search", run_id=run_id))
        subject.provider.force_flush()
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
        retention = subject.retention
        estimate = (retention.held_spans, retention.held_bytes) if retention else (0, 0)
        results[ratio] = (grown, estimate)
        subject.provider.shutdown()
    held = results[0.01][0] - results[1.0][0]
    spans, estimate = results[0.01][1]
    print(f"open runs without retention: {results[1.0][0] / 1e6:.1f} MB")
    print(f"open runs with retention:    {results[0.01][0] / 1e6:.1f} MB")
    print(f"held: {held / 1e6:.1f} MB for {spans:,} spans = {held / max(spans, 1):.0f} B a span")
    per = estimate / max(spans, 1)
    print(f"the processor's estimate: {estimate / 1e6:.1f} MB = {per:.0f} B a span")


def main(args: argparse.Namespace) -> int:
    rounds = int(args.rounds or (4 if args.quick else 12))
    turns = 20 if args.quick else 50
    cost(rounds, turns)
    exported(1_000 if args.quick else 5_000)
    held_memory(1_000 if args.quick else int(getattr(args, "open_runs", 10_000) or 10_000))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--open-runs", type=int, default=10_000)
    asyncio.set_event_loop(asyncio.new_event_loop())
    raise SystemExit(main(parser.parse_args()))
