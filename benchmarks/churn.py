"""Tenants that come and go: a process that runs for weeks, measured through its real endpoint.

    python benchmarks/run.py --churn 10000,50000,100000,300000
    python benchmarks/churn.py --steps 10000,50000 --active 1000      # the same, directly

The public API as a user deploys it: ``configure_telemetry(otlp=False, prometheus_port=0)``, a
handler with ``max_tenants`` set to the active count and a test clock, one new tenant every 12
simulated seconds (the idle time lets ``--active`` tenants be active at once), one run of the
demo's shape each (``tenant_load``). At each step (tenants ever seen) the endpoint is scraped
over HTTP in the OpenMetrics format, as Prometheus does, and the row says:

* tenants ever seen and active now; RSS of the whole process (SDK included) and its peak;
* process CPU of a scrape (the server runs in this process), the steady state and, in brackets,
  the step's first scrape (which renders the lines of every tenant new since the last step);
  and the scrape's lines;
* whether the newest tenant has its own series, and how many lines read ``__overflow__`` or
  the SDK's ``otel_metric_overflow``.

Printed last: RSS growth from the first step to the last and the scrape-CPU ratio last / first,
the two churn targets of ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tenant_load import play_run

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.export.setup import configure_telemetry

ARRIVAL_S = 12.0
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def _scrape(port: int) -> tuple[float, bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    request.add_header("Accept", OPENMETRICS)
    gc.collect()
    started = time.process_time()
    with urllib.request.urlopen(request, timeout=600) as response:
        body = bytes(response.read())
    return time.process_time() - started, body


def run(steps: list[int], active: int) -> list[dict[str, Any]]:
    telemetry = configure_telemetry(otlp=False, prometheus_port=0, set_global=False)
    clock = Clock()
    handler = OTelCallbackHandler(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        capture_content=False,
        max_tenants=active,
        tenant_idle_s=ARRIVAL_S * active - 1.0,
        clock=clock,
    )
    rng = random.Random(1)
    rows: list[dict[str, Any]] = []
    played = 0
    try:
        for step in steps:
            runs_started = time.process_time()
            while played < step:
                clock.now += ARRIVAL_S
                play_run(handler, f"tenant-{played:07d}", rng)
                played += 1
            runs_cpu = time.process_time() - runs_started
            # Prometheus scrapes every 15 s: the step's first scrape renders the lines of the
            # tenants that arrived since the last step, the next one is the steady state.
            first_cpu, _ = _scrape(telemetry.prometheus_port or 0)
            cpu, body = _scrape(telemetry.prometheus_port or 0)
            newest = f'tenant_id="tenant-{played - 1:07d}"'.encode()
            lines = sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#"))
            rows.append(
                {
                    "ever": played,
                    "active": len(handler._core.tenants),
                    "rss_mb": _rss_mb(),
                    "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                    "scrape_cpu_s": cpu,
                    "first_scrape_cpu_s": first_cpu,
                    "lines": lines,
                    "newest": newest in body,
                    "overflow": body.count(semconv.OVERFLOW_VALUE.encode())
                    + body.count(b"otel_metric_overflow"),
                    "runs_cpu_s": runs_cpu,
                }
            )
            print(_row(rows[-1]), file=sys.stderr, flush=True)
    finally:
        telemetry.shutdown()
    return rows


HEADERS = (
    "tenants ever",
    "active",
    "RSS / peak MB",
    "OpenMetrics scrape CPU s (first after the step)",
    "lines",
    "newest has series",
    "overflow lines",
    "CPU of the runs since last row s",
)


def _row(row: dict[str, Any]) -> str:
    cells = [
        f"{row['ever']:,}",
        f"{row['active']:,}",
        f"{row['rss_mb']:.0f} / {row['peak_mb']:.0f}",
        f"{row['scrape_cpu_s']:.3f} ({row['first_scrape_cpu_s']:.3f})",
        f"{row['lines']:,}",
        "yes" if row["newest"] else "NO",
        f"{row['overflow']}",
        f"{row['runs_cpu_s']:.1f}",
    ]
    return "| " + " | ".join(cells) + " |"


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| " + " | ".join(HEADERS) + " |")
    print("|" + "---|" * len(HEADERS))
    for row in rows:
        print(_row(row))
    first, last = rows[0], rows[-1]
    print(
        f"RSS growth {first['ever']:,} -> {last['ever']:,} tenants ever: "
        f"{last['rss_mb'] - first['rss_mb']:+.1f} MB; scrape CPU ratio "
        f"{last['scrape_cpu_s'] / max(first['scrape_cpu_s'], 1e-9):.2f}x"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="10000,50000,100000,300000", help="tenants ever seen")
    parser.add_argument("--active", type=int, default=1_000, help="tenants active at once")
    args = parser.parse_args(argv)
    steps = sorted(int(part) for part in args.steps.replace("_", "").split(",") if part.strip())
    print_table(run(steps, args.active))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
