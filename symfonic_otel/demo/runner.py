"""Wire the demo together: SDK providers, the handler, traffic, progress, and the summary."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import TextIO

from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from symfonic_otel.demo.report import RunSpanSampler, render_summary
from symfonic_otel.demo.traffic import AGENT_NAME, PlannedRun, Traffic, plan_runs, tenants
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.setup import configure_telemetry

__all__ = ["DemoOptions", "run_demo"]

EXIT_INTERRUPTED = 130
# Runs that "lost their worker" are closed as abandoned after this long, so the orphan counter
# moves while the demo is still serving metrics.
DEMO_RUN_TTL_S = 5.0


@dataclass(frozen=True)
class DemoOptions:
    runs: int = 240
    tenants: int = 5
    seed: int = 7
    prometheus_port: int | None = None
    duration_s: float | None = None
    rate: float = 20.0
    otlp: bool = False
    concurrency: int = 32

    def __post_init__(self) -> None:
        if self.runs < 1:
            raise ValueError(f"--runs must be at least 1, got {self.runs}")
        if not 1 <= self.tenants <= 1000:
            raise ValueError(f"--tenants must be between 1 and 1000, got {self.tenants}")
        if self.prometheus_port is not None and not 0 <= self.prometheus_port <= 65535:
            raise ValueError(f"--prometheus-port must be in 0..65535, got {self.prometheus_port}")
        if self.duration_s is not None and not self.duration_s > 0:
            raise ValueError(f"--duration must be positive seconds, got {self.duration_s}")
        if not self.rate > 0:
            raise ValueError(f"--rate must be positive, got {self.rate}")
        if self.concurrency < 1:
            raise ValueError(f"--concurrency must be at least 1, got {self.concurrency}")


def run_demo(options: DemoOptions, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the demo; returns the process exit code (130 when interrupted)."""
    console = Console(file=out or sys.stdout, width=110, highlight=False)
    progress_console = Console(file=err or sys.stderr)
    reader = InMemoryMetricReader()
    sampler = RunSpanSampler()
    telemetry = configure_telemetry(
        service_name="symfonic-otel-demo",
        otlp=options.otlp,
        prometheus_port=options.prometheus_port,
        set_global=False,
        span_processors=[SimpleSpanProcessor(sampler)],
        metric_readers=[reader],
    )
    handler = OTelCallbackHandler(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        agent_name=AGENT_NAME,
        run_ttl_s=DEMO_RUN_TTL_S,
    )
    if telemetry.prometheus_port is not None:
        progress_console.print(
            f"Serving Prometheus metrics on http://127.0.0.1:{telemetry.prometheus_port}/metrics"
        )
    names = tenants(options.tenants)
    runs = plan_runs(options.seed, names)
    interrupted = False
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn()
        if options.duration_s is None
        else TextColumn("{task.completed:.0f} runs"),
        TimeElapsedColumn(),
        console=progress_console,
        transient=False,
    ) as progress:
        task = progress.add_task(
            "agent runs", total=None if options.duration_s is not None else options.runs
        )

        def done(run: PlannedRun) -> None:
            progress.advance(task)

        traffic = Traffic(handler, concurrency=options.concurrency, on_done=done)
        sampler.run_id = _sample_run_id(options.seed, names)
        asyncio.run(traffic.warm_up(plan_runs(options.seed + 1, names)))
        try:
            if options.duration_s is not None:
                asyncio.run(traffic.run_for(runs, options.duration_s, options.rate))
            else:
                asyncio.run(traffic.run_count(runs, options.runs))
        except KeyboardInterrupt:
            interrupted = True
    # Runs whose end never came (lost workers) are closed now, as at any shutdown.
    handler.close_open_runs()
    telemetry.force_flush()
    render_summary(console, reader.get_metrics_data(), sampler.spans, partial=interrupted)
    telemetry.shutdown()
    return EXIT_INTERRUPTED if interrupted else 0


def _sample_run_id(seed: int, names: list[str]) -> str | None:
    """The first planned run that bails and is recovered by synthesis: the most telling trace."""
    for run in plan_runs(seed, names):
        if run.plan.scenario == "loop_cut" and run.plan.config.synthesize_on_empty_final:
            return run.run_id
        if run.index > 10_000:
            return None
    return None
