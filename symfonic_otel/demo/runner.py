"""Wire the demo together: SDK providers, the handler, traffic, progress, and the summary."""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from symfonic_otel.demo.flush import (
    ExportWarnings,
    bounded_flush,
    otlp_endpoints,
    quiet_logs,
    refuse_bad_settings,
)
from symfonic_otel.demo.levers import (
    DEFAULT_NOISY,
    LOST_RUN_EVERY,
    RETRIED_END_EVERY,
    Faults,
    NoisyClock,
    noisy_tenants,
    tenant_names,
)
from symfonic_otel.demo.notes import RunContext
from symfonic_otel.demo.report import RunSpanSampler, render_summary
from symfonic_otel.demo.scenarios import NoisyKind
from symfonic_otel.demo.traffic import AGENT_NAME, PlannedRun, Traffic, plan_runs
from symfonic_otel.environment import TelemetrySettingWarning
from symfonic_otel.export.prometheus import bind_hint
from symfonic_otel.export.setup import Telemetry, configure_telemetry
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.read.content import resolve_capture
from symfonic_otel.read.sanitise import is_real

__all__ = ["DemoError", "DemoOptions", "run_demo"]

EXIT_INTERRUPTED = 130
# The final flush: a collector that answers takes milliseconds, one that refuses fails at once
# (the flush stops waiting then); only a hung collector costs the whole budget.
FLUSH_BUDGET_S = 5.0
INTERRUPTED_FLUSH_BUDGET_S = 2.0  # after Ctrl-C the user is waiting
SHUTDOWN_AFTER_FLUSH_MS = 2_000
SHUTDOWN_AFTER_FAILURE_MS = 300
WARM_UP_RUNS = 40
SAMPLE_SCAN_RUNS = 5_000  # with --duration: how far ahead to look for a run worth showing
BAIL_SCENARIOS = frozenset({"loop_cut", "iteration_cap", "empty_completion"})
# With --faults, runs that "lost their worker" are closed as abandoned after this long, so the
# orphan counter moves while the demo is still serving metrics.
DEMO_RUN_TTL_S = 5.0
QUIET_RUN_TTL_S = 3600.0  # without --faults: the handler's own default


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
    faults: bool = False
    """Also simulate lost workers and retried end events (see ``levers.Faults``)."""

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
    if not is_real(value) or value <= 0:
        raise ValueError(f"{flag} must be a positive, finite number, got {value!r}")


class DemoError(Exception):
    """A setup problem the user can fix (a busy port): the CLI prints it as one line, exit 2."""


def run_demo(options: DemoOptions, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the demo; returns the process exit code (130 when interrupted).

    Raises ``DemoError`` when the demo cannot start (the Prometheus port is taken, a telemetry
    environment variable holds a value it cannot use).
    """
    console = Console(file=out or sys.stdout, width=110, highlight=False)
    progress_console = Console(file=err or sys.stderr)
    reader = InMemoryMetricReader()
    sampler = RunSpanSampler()
    with quiet_logs() as export_warnings:
        try:
            with refuse_bad_settings():
                resolve_capture(None)  # the handler's variable, read before anything is built
                telemetry = configure_telemetry(
                    service_name="symfonic-otel-demo",
                    otlp=options.otlp,
                    prometheus_port=options.prometheus_port,
                    set_global=False,
                    span_processors=[SimpleSpanProcessor(sampler)],
                    metric_readers=[reader],
                )
        except TelemetrySettingWarning as exc:
            raise DemoError(f"{exc.problem} (fix or unset it)") from None
        except ValueError as exc:
            if isinstance(exc.__cause__, OSError):
                reason = exc.__cause__.strerror or str(exc.__cause__)
                raise DemoError(
                    f"--prometheus-port {options.prometheus_port}: {reason} "
                    f"({bind_hint(exc.__cause__)})"
                ) from None
            raise
        handler = OTelCallbackHandler(
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
            agent_name=AGENT_NAME,
            # Only lost workers need closing while the demo serves metrics; without them a
            # short TTL would turn a run slowed by a loaded machine into a false orphan.
            run_ttl_s=DEMO_RUN_TTL_S if options.faults else QUIET_RUN_TTL_S,
        )
        if telemetry.prometheus_port is not None:
            progress_console.print(
                f"Serving Prometheus metrics on http://127.0.0.1:{telemetry.prometheus_port}/metrics"
            )
            if options.duration_s is None:  # --runs finish in seconds, and the server with them
                progress_console.print(
                    "Only while the runs last (a few seconds): for Prometheus to scrape it, "
                    "add --duration SECONDS (e.g. --duration 600)"
                )
        names = tenant_names(options.tenants)
        noisy = noisy_tenants(options.noisy, names)
        clock = NoisyClock(options.noisy_for_s)
        faults = Faults(options.faults)
        runs = plan_runs(options.seed, names, noisy, clock, faults)
        progress_console.print(_introduction(options, names))
        progress_console.print(_noisy_line(options, names, noisy))
        if options.faults:
            progress_console.print(
                f"Simulated faults: about 1 run in {LOST_RUN_EVERY} loses its worker, "
                f"1 in {RETRIED_END_EVERY} has its end event sent twice"
            )
        sampler.candidates = _sample_candidates(
            options.seed,
            names,
            noisy,
            options.runs if options.duration_s is None else None,
            faults,
        )
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
                asyncio.run(
                    traffic.warm_up(plan_runs(options.seed + 1, names, noisy), WARM_UP_RUNS)
                )
                clock.start()
                if options.duration_s is not None:
                    asyncio.run(traffic.run_for(runs, options.duration_s, options.rate))
                else:
                    asyncio.run(traffic.run_count(runs, options.runs))
        except KeyboardInterrupt:
            interrupted = True
        context = RunContext(
            requested_runs=options.runs if options.duration_s is None else None,
            duration_s=options.duration_s,
            warm_up_runs=WARM_UP_RUNS,
            interrupted=interrupted,
        )
        try:
            # Runs whose end never came (lost workers) are closed now, as at any shutdown. The
            # summary is read from in-memory readers, so it needs no collector: print it first.
            handler.close_open_runs()
            render_summary(
                console, reader.get_metrics_data(), sampler, partial=interrupted, context=context
            )
        except KeyboardInterrupt:  # Ctrl-C while printing: stop printing, still shut down
            interrupted = True
        interrupted = _finish(telemetry, export_warnings, progress_console, options, interrupted)
    return EXIT_INTERRUPTED if interrupted else 0


def _finish(
    telemetry: Telemetry,
    export_warnings: ExportWarnings,
    say: Console,
    options: DemoOptions,
    interrupted: bool,
) -> bool:
    """Flush and shut down within seconds, whatever the collector does; True if interrupted."""
    budget_s = INTERRUPTED_FLUSH_BUDGET_S if interrupted else FLUSH_BUDGET_S
    delivered = cut_short = False
    try:
        if options.otlp:
            say.print(f"Sending the telemetry over OTLP (at most {budget_s:g} s; Ctrl-C skips it)")
        delivered = bounded_flush(telemetry, export_warnings, budget_s)
    except KeyboardInterrupt:
        interrupted = cut_short = True
        say.print(
            "Interrupted while sending the telemetry: the summary above is complete, "
            "the collector may have missed part of it."
        )
    failed_attempts = export_warnings.count  # later ones: retries the shutdown aborts
    try:
        # After a failed flush nothing is worth waiting for: the short timeout shuts the
        # exporters down, which aborts their retry back-off.
        telemetry.shutdown(
            timeout_millis=SHUTDOWN_AFTER_FLUSH_MS if delivered else SHUTDOWN_AFTER_FAILURE_MS
        )
    except KeyboardInterrupt:
        interrupted = cut_short = True
    if cut_short:  # the user asked to skip the flush: no verdict on the collector
        return True
    if options.otlp and failed_attempts:
        endpoints, configured = otlp_endpoints()
        source = (
            "from the OTEL_EXPORTER_OTLP_* variables"
            if configured
            else "the default; OTEL_EXPORTER_OTLP_ENDPOINT sets another"
        )
        say.print(
            f"OTLP export failed ({failed_attempts} "
            f"warning{'' if failed_attempts == 1 else 's'} from the OpenTelemetry SDK, not shown): "
            f"no collector accepted the telemetry at {' and '.join(endpoints)} ({source}). "
            "The summary above does not depend on it."
        )
    elif options.otlp and not delivered:
        say.print(
            f"The OTLP collector did not confirm the telemetry within {budget_s:g} s; "
            "part of it may be lost."
        )
    return interrupted


def _introduction(options: DemoOptions, names: list[str]) -> str:
    """What the demo does, before anything else it prints."""
    runs = (
        f"{options.runs} runs"
        if options.duration_s is None
        else f"runs at {options.rate:g} per second for {options.duration_s:g} s"
    )
    tenants = f"{len(names)} tenant{'' if len(names) == 1 else 's'}"
    return (
        f"symfonic-otel demo: {runs} of the reference ReAct agent, with scripted models (no "
        f"network, no API key), for {tenants}, recorded with OpenTelemetry. The summary at the "
        "end is read back from the SDK's metrics and spans, the data Prometheus and Grafana show."
    )


def _noisy_line(options: DemoOptions, names: list[str], noisy: Mapping[str, NoisyKind]) -> str:
    """Which tenants misbehave on purpose; when none, why."""
    if noisy:
        until = "" if options.noisy_for_s is None else f" for {options.noisy_for_s:g} s"
        kinds = ", ".join(f"{tenant} ({kind})" for tenant, kind in noisy.items())
        return f"Noisy tenants{until}: {kinds}; they misbehave on purpose, the others do not."
    if options.noisy is not None:
        return "Noisy tenants: none (--noisy none): every tenant behaves."
    return (
        f"Noisy tenants: none: {', '.join(DEFAULT_NOISY)} is not among --tenants "
        "(name one with --noisy TENANT=KIND)."
    )


def _sample_candidates(
    seed: int,
    names: list[str],
    noisy: Mapping[str, NoisyKind],
    runs: int | None,
    faults: Faults,
) -> dict[str, str]:
    """Runs whose trace is worth showing, best first, among the runs this demo will make.

    Best: a loop cut handed to the synthesis fallback (the whole contract in one tree); then
    any other silent bail; then the first run, so a short demo still shows a trace.
    """
    best: dict[str, str] = {}
    bail: dict[str, str] = {}
    first: dict[str, str] = {}
    scan = SAMPLE_SCAN_RUNS if runs is None else min(runs, SAMPLE_SCAN_RUNS)
    for run in itertools.islice(plan_runs(seed, names, noisy, faults=faults), scan):
        plan = run.plan
        if run.plan.cancel_after_s is not None:
            continue
        if not first:
            first[run.run_id] = f"the first run, {plan.scenario.replace('_', ' ')}"
        if plan.scenario in BAIL_SCENARIOS:
            if plan.config.synthesize_on_empty_final and plan.scenario == "loop_cut":
                best[run.run_id] = "a loop cut handed to the synthesis fallback"
                break
            if not bail:
                bail[run.run_id] = f"a silent bail, {plan.scenario.replace('_', ' ')}"
    return {**best, **bail, **first}
