"""Reliability figures: a dead collector, sustained load, dropped spans, bounded flush/shutdown.

    python benchmarks/reliability.py                 # the full run: 100,000 runs of load
    python benchmarks/reliability.py --runs 20000    # quicker

Everything is stated as a ratio or a bound, never as this machine's absolute times:

* latency: the reference loop with the handler, per-run latency with the OTLP exporters pointed
  at a collector that refuses connections / accepts and never answers, divided by the same
  handler with no exporter; interleaved batches, median over rounds of the paired batch means;
* memory: resident set growth over N runs through the handler with the batch span processor
  exporting to a hanging collector (so the export queue is full all along), and the state still
  held afterwards (open runs, run records, spans);
* dropped spans: spans created vs dropped-and-counted vs kept, and the logged total;
* flush / shutdown: time taken against the timeout asked for, with the pipeline loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import sys
import time
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import structlog
from opentelemetry.sdk.trace import ReadableSpan
from structlog.testing import capture_logs

from symfonic_otel.core.runs import OpenRun
from symfonic_otel.export.setup import Telemetry, configure_telemetry
from tests.support.reliability_support import (
    EXPORT_INTERVAL_MS,
    LatencyResult,
    RaiseSpy,
    dead_collector,
    handler_for,
    handler_run,
    live_instances,
    measure_latency,
    no_exporter_telemetry,
    rss_mb,
)

PROTOCOLS = ("grpc", "http/protobuf")
COLLECTORS = ("refused", "hanging")
MODEL_LATENCY_S = 0.003
QUEUE_SIZE = 2048  # the SDK defaults for OTEL_BSP_MAX_QUEUE_SIZE / _MAX_EXPORT_BATCH_SIZE
BATCH_SIZE = 512
WARM_UP_RUNS = 5_000
CHECKPOINTS = 5
FLUSH_TIMEOUT_MS = 1_000
SHUTDOWN_TIMEOUT_MS = 2_000


@contextmanager
def otel_env(**values: str) -> Iterator[None]:
    """Set OTEL_* variables for the configurations built inside, then restore."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def otlp_telemetry(endpoint: str, protocol: str, **extra: str) -> Telemetry:
    with otel_env(
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
        OTEL_BSP_SCHEDULE_DELAY="50",
        **extra,
    ):
        return configure_telemetry(set_global=False, export_interval_ms=EXPORT_INTERVAL_MS)


def latency(rounds: int, batch: int) -> None:
    print(f"\n## Agent latency with a dead collector ({rounds} rounds x {batch} runs per arm)")
    print("reference loop + handler, scripted model 3 ms per call, one tool call per run;")
    print("ratio = median over rounds of (arm batch mean / no-exporter batch mean, same round)")
    for protocol in PROTOCOLS:
        with dead_collector("refused") as refused, dead_collector("hanging") as hanging:
            telemetries = {
                "none": no_exporter_telemetry(),
                "refused": otlp_telemetry(refused, protocol),
                "hanging": otlp_telemetry(hanging, protocol),
            }
            spies = {arm: RaiseSpy(handler_for(t)) for arm, t in telemetries.items()}
            asyncio.run(measure_latency(spies, rounds=1, batch=2, model_latency_s=0.0))
            result = LatencyResult(list(spies))
            asyncio.run(
                measure_latency(
                    spies,
                    rounds=rounds,
                    batch=batch,
                    model_latency_s=MODEL_LATENCY_S,
                    result=result,
                )
            )
            raised = sum(len(spy.raised) for spy in spies.values())
            completed = sum(len(answers) for answers in result.answers.values())
            for kind in COLLECTORS:
                print(
                    f"  {protocol:<13} collector {kind:<8} latency ratio "
                    f"{result.ratio(kind, 'none'):.3f}x"
                )
            print(
                f"  {protocol:<13} runs completed {completed}, exceptions from the handler {raised}"
            )
            for telemetry in telemetries.values():
                telemetry.shutdown(timeout_millis=SHUTDOWN_TIMEOUT_MS)


def sustained_load(runs: int) -> None:
    print(
        f"\n## Sustained load: {runs:,} runs through the handler, batch span processor, "
        "gRPC collector hanging"
    )
    with dead_collector("hanging") as endpoint, capture_logs() as logs:
        telemetry = otlp_telemetry(
            endpoint,
            "grpc",
            OTEL_BSP_MAX_QUEUE_SIZE=str(QUEUE_SIZE),
            OTEL_BSP_MAX_EXPORT_BATCH_SIZE=str(BATCH_SIZE),
        )
        handler = handler_for(telemetry)
        for index in range(WARM_UP_RUNS):
            handler_run(handler, index)
        gc.collect()
        start_rss = rss_mb()
        readings = []
        step = runs // CHECKPOINTS
        for checkpoint in range(CHECKPOINTS):
            first = WARM_UP_RUNS + checkpoint * step
            for index in range(first, first + step):
                handler_run(handler, index)
            gc.collect()
            readings.append(rss_mb() - start_rss)
        done = step * CHECKPOINTS
        total_spans = 3 * (WARM_UP_RUNS + done)
        dropped = telemetry.dropped_spans
        open_runs = handler.open_runs
        run_records = live_instances(OpenRun)
        spans_held = live_instances(ReadableSpan)
        telemetry.shutdown(timeout_millis=SHUTDOWN_TIMEOUT_MS)
    [summary] = [e for e in logs if e["event"] == "symfonic_otel.telemetry_shutdown"]
    failures = [e["kind"] for e in logs if e["event"] == "symfonic_otel.internal_failure"]
    queue_full = failures.count("span_queue_full")
    kept = total_spans - dropped
    print(
        f"  RSS growth over {done:,} runs (after {WARM_UP_RUNS:,} warm-up runs): "
        f"{readings[-1]:+.1f} MB; at each {step:,}-run checkpoint: "
        + ", ".join(f"{r:+.1f}" for r in readings)
        + " MB"
    )
    print(
        f"  after the first checkpoint: {readings[-1] - readings[0]:+.1f} MB over the last "
        f"{done - step:,} runs ({(readings[-1] - readings[0]) * 1024 * 1024 / (done - step):.0f} "
        "bytes a run)"
    )
    print(
        f"  retained afterwards: handler.open_runs={open_runs}, OpenRun objects={run_records}, "
        f"spans held={spans_held} (bound: queue {QUEUE_SIZE} + batches in the exporter)"
    )
    print(
        f"  spans created {total_spans:,}; dropped and counted {dropped:,} "
        f"({dropped / total_spans:.1%}); kept {kept:,} = queue {QUEUE_SIZE:,} + "
        f"{(kept - QUEUE_SIZE) / BATCH_SIZE:.1f} x batch {BATCH_SIZE} handed to the exporter"
    )
    print(
        f"  logged at shutdown: dropped_spans={summary['dropped_spans']:,} "
        f"(level {summary['log_level']}; matches telemetry.dropped_spans: "
        f"{summary['dropped_spans'] == dropped}); queue-full warnings logged: "
        f"{queue_full} (other internal failures: {len(failures) - queue_full})"
    )


def bounded_lifecycle() -> None:
    print(
        f"\n## force_flush({FLUSH_TIMEOUT_MS}) / shutdown({SHUTDOWN_TIMEOUT_MS}) with "
        "5,000 runs queued; elapsed / timeout"
    )
    for protocol in PROTOCOLS:
        for kind in COLLECTORS:
            with dead_collector(kind) as endpoint:
                telemetry = otlp_telemetry(endpoint, protocol)
                handler = handler_for(telemetry)
                for index in range(5_000):
                    handler_run(handler, index)
                started = time.monotonic()
                flushed = telemetry.force_flush(timeout_millis=FLUSH_TIMEOUT_MS)
                flush_s = time.monotonic() - started
                started = time.monotonic()
                clean = telemetry.shutdown(timeout_millis=SHUTDOWN_TIMEOUT_MS)
                shutdown_s = time.monotonic() - started
            print(
                f"  {protocol:<13} {kind:<8} flush {flush_s * 1000 / FLUSH_TIMEOUT_MS:.2f}x "
                f"(returned {flushed}), shutdown {shutdown_s * 1000 / SHUTDOWN_TIMEOUT_MS:.2f}x "
                f"(returned {clean})"
            )


def _drop_log_line(logger: object, method: str, event: MutableMapping[str, Any]) -> NoReturn:
    raise structlog.DropEvent  # keep the figures readable; the lines we need are captured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000, help="sustained-load runs")
    parser.add_argument("--rounds", type=int, default=40, help="latency rounds per protocol")
    parser.add_argument("--batch", type=int, default=8, help="runs per arm per round")
    args = parser.parse_args()
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            del os.environ[name]
    # The exporters' own retry warnings are expected here; our lines are captured.
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)
    structlog.configure(processors=[_drop_log_line])

    command = "python benchmarks/reliability.py" + "".join(
        f" {flag} {value}"
        for flag, value, default in (
            ("--runs", args.runs, 100_000),
            ("--rounds", args.rounds, 40),
            ("--batch", args.batch, 8),
        )
        if value != default
    )
    print(f"$ {command}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    latency(args.rounds, args.batch)
    sustained_load(args.runs)
    bounded_lifecycle()


if __name__ == "__main__":
    main()
