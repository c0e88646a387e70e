"""Wire the demo together: SDK providers, the handler, traffic, progress, and the summary."""

from __future__ import annotations

import asyncio
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from symfonic_otel.demo.levers import NoisyClock, noisy_tenants, tenant_names
from symfonic_otel.demo.report import RunSpanSampler, render_summary
from symfonic_otel.demo.scenarios import NoisyKind
from symfonic_otel.demo.traffic import AGENT_NAME, PlannedRun, Traffic, plan_runs
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.setup import configure_telemetry

__all__ = ["DemoOptions", "run_demo"]

EXIT_INTERRUPTED = 130
FLUSH_TIMEOUT_MS = 10_000
INTERRUPTED_FLUSH_TIMEOUT_MS = 2_000
# Runs that "lost their worker" are closed as abandoned after this long, so the orphan counter
# moves while the demo is still serving metrics.
DEMO_RUN_TTL_S = 5.0


@dataclass(frozen=True)
class DemoOptions:
    runs: int = 240
    tenants: int | tuple[str, ...] = 5
    """A count, or the tenants' names."""
    seed: int = 7
    prometheus_port: int | None = None
    duration_s: float | None = None
    rate: float = 20.0
    otlp: bool = False
    concurrency: int = 32
    noisy: tuple[tuple[str, str], ...] | None = None
    """(tenant, kind) pairs; ``None``: globex bails (when it is a tenant); ``()``: none noisy."""
    noisy_for_s: float | None = None
    """With ``duration_s``: noisy tenants turn ordinary after this long."""

    def __post_init__(self) -> None:
        _whole("--runs", self.runs, minimum=1)
        if not isinstance(self.tenants, tuple):
            _whole("--tenants", self.tenants, minimum=1, maximum=1000)
        noisy_tenants(self.noisy, tenant_names(self.tenants))
        if self.noisy_for_s is not None:
            _positive("--noisy-for", self.noisy_for_s)
            if self.duration_s is None:
                raise ValueError("--noisy-for needs --duration")
        _whole("--seed", self.seed, minimum=None)
        if self.prometheus_port is not None:
            _whole("--prometheus-port", self.prometheus_port, minimum=0, maximum=65535)
        if self.duration_s is not None:
            _positive("--duration", self.duration_s)
        _positive("--rate", self.rate)
        _whole("--concurrency", self.concurrency, minimum=1)


def _whole(flag: str, value: object, *, minimum: int | None, maximum: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{flag} must be a whole number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{flag} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{flag} must be at most {maximum}, got {value}")


def _positive(flag: str, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{flag} must be a positive, finite number, got {value!r}")


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
    names = tenant_names(options.tenants)
    noisy = noisy_tenants(options.noisy, names)
    clock = NoisyClock(options.noisy_for_s)
    runs = plan_runs(options.seed, names, noisy, clock)
    if noisy:
        until = "" if options.noisy_for_s is None else f" for {options.noisy_for_s:g} s"
        kinds = ", ".join(f"{tenant} ({kind})" for tenant, kind in noisy.items())
        progress_console.print(f"Noisy tenants{until}: {kinds}")
    interrupted = False
    # Ctrl-C may land anywhere from here on (warm-up included): always flush and summarise.
    try:
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
            sampler.run_id = _sample_run_id(options.seed, names, noisy)
            asyncio.run(traffic.warm_up(plan_runs(options.seed + 1, names, noisy)))
            clock.start()
            if options.duration_s is not None:
                asyncio.run(traffic.run_for(runs, options.duration_s, options.rate))
            else:
                asyncio.run(traffic.run_count(runs, options.runs))
    except KeyboardInterrupt:
        interrupted = True
    # Runs whose end never came (lost workers) are closed now, as at any shutdown.
    handler.close_open_runs()
    # After Ctrl-C the user is waiting: give a dead collector seconds, not the default ten.
    timeout_ms = INTERRUPTED_FLUSH_TIMEOUT_MS if interrupted else FLUSH_TIMEOUT_MS
    telemetry.force_flush(timeout_millis=timeout_ms)
    render_summary(console, reader.get_metrics_data(), sampler.spans, partial=interrupted)
    telemetry.shutdown(timeout_millis=timeout_ms)
    return EXIT_INTERRUPTED if interrupted else 0


def _sample_run_id(seed: int, names: list[str], noisy: Mapping[str, NoisyKind]) -> str | None:
    """The first planned run that bails and is recovered by synthesis: the most telling trace."""
    for run in plan_runs(seed, names, noisy):
        if run.plan.scenario == "loop_cut" and run.plan.config.synthesize_on_empty_final:
            return run.run_id
        if run.index > 10_000:
            return None
    return None
