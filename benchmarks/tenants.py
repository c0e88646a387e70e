"""Cost per tenant count: scrape size and CPU, memory, agent latency under scrape, OTLP export.

    python benchmarks/run.py --tenants 10,100,1000,10000
    python benchmarks/tenants.py --tenants 10,100,1000          # the same, directly
    python benchmarks/tenants.py --profile-scrape 1000          # where one scrape's CPU goes

Each tenant count runs in a fresh subprocess (RSS and its high-water mark are per process). The
handler is built through its public constructor with ``max_tenants`` equal to the tenant count,
and every tenant plays ``--runs`` runs of the demo's workload shape (``tenant_load``) before
anything is measured, so the series are those of a process that has seen each tenant a few times.

Measured, per tenant count:

* exposition lines (samples) of a scrape, per tenant and in all; scrape bytes and process CPU
  for the classic text format and for OpenMetrics (what Prometheus asks for), through the same
  registry the endpoint serves (reader, exemplars, prometheus_client's exposition);
* RSS after the scrapes and the process high-water mark;
* an agent turn (the handler's callbacks for one run, after 2 ms of simulated I/O): p50 / p99 /
  max wall time while quiet and while OpenMetrics scrapes run back to back in another thread;
* OTLP: collection + protobuf encoding CPU and bytes, cumulative and delta, for an interval in
  which 10 % of the tenants ran, and the largest message once split into batches of the default
  size (unsplit in brackets).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import random
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider, ObservableCounter
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    MetricsData,
)
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry
from tenant_load import active_share, play_run, play_tenants, tenant_handler, tenant_ids

from symfonic_otel import semconv
from symfonic_otel.emit.budget import cardinality_view
from symfonic_otel.emit.tenant_hub import hub_for
from symfonic_otel.export.exporters import DEFAULT_OTLP_METRIC_BATCH
from symfonic_otel.export.prometheus import (
    LatestCollectionReader,
    PrometheusEndpoint,
    ScrapeCollector,
)

IO_S = 0.002  # simulated I/O before each turn's callbacks
TURNS = 300
DELTA = {
    Counter: AggregationTemporality.DELTA,
    ObservableCounter: AggregationTemporality.DELTA,
    Histogram: AggregationTemporality.DELTA,
}


class Subject:
    """One process' telemetry: the Prometheus registry the endpoint serves, two OTLP mirrors."""

    def __init__(self, tenants: int) -> None:
        families = CollectorRegistry(auto_describe=True)
        self.prometheus = LatestCollectionReader(families)
        registry = CollectorRegistry()
        registry.register(ScrapeCollector(families, self.prometheus))
        self.endpoint = PrometheusEndpoint(registry)  # what the scrape endpoint serves
        self.cumulative = InMemoryMetricReader()
        self.delta = InMemoryMetricReader(preferred_temporality=DELTA)  # type: ignore[arg-type]
        self.meter_provider = MeterProvider(
            metric_readers=[self.prometheus, self.cumulative, self.delta],
            # Above the handler's own series budget at any count, so no tenant lands in the
            # SDK's overflow series and every tenant's lines are counted.
            views=[cardinality_view(max(100_000, tenants * 40))],
        )
        self.tracer_provider = TracerProvider()  # sampled spans: the histograms get exemplars
        self.handler = tenant_handler(
            self.tracer_provider, self.meter_provider, max_tenants=tenants
        )
        self.endpoint.bind(hub_for(self.meter_provider))

    def scrape_text(self) -> bytes:
        return b"".join(self.endpoint.scrape(openmetrics=False))

    def scrape_openmetrics(self) -> bytes:
        return b"".join(self.endpoint.scrape(openmetrics=True))

    def scrape_streamed(self) -> int:
        """An OpenMetrics scrape as the server sends it (chunk by chunk): its size."""
        return sum(len(chunk) for chunk in self.endpoint.scrape(openmetrics=True))


def _cpu(action: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.process_time()
    result = action()
    return time.process_time() - start, result


def _lines(body: bytes) -> int:
    return sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))


def _turns(subject: Subject, tenants: list[str], stop: Callable[[], bool]) -> list[float]:
    """Wall ms of each turn's callbacks (after 2 ms of I/O), until ``stop()`` and TURNS turns."""
    rng = random.Random(7)
    samples: list[float] = []
    while len(samples) < TURNS or not stop():
        time.sleep(IO_S)
        tenant = tenants[rng.randrange(len(tenants))]
        start = time.perf_counter()
        play_run(subject.handler, tenant, rng)
        samples.append((time.perf_counter() - start) * 1000)
        if len(samples) > 20 * TURNS:
            break
    return samples


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered),
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "max": ordered[-1],
    }


def _otlp(data: MetricsData | None) -> dict[str, float]:
    """Encode CPU, bytes, points; largest message split at the default batch size."""
    assert data is not None
    cpu, body = _cpu(lambda: encode_metrics(data).SerializeToString())
    exporter = OTLPMetricExporter(max_export_batch_size=DEFAULT_OTLP_METRIC_BATCH)
    largest = max(
        (
            len(encode_metrics(part).SerializeToString())
            for part in exporter._split_metrics_data(data)
        ),
        default=0,
    )
    points = sum(
        len(metric.data.data_points)
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
    )
    return {"encode_cpu_s": cpu, "bytes": len(body), "points": points, "largest": largest}


def measure(tenants: int, runs: int) -> dict[str, Any]:
    subject = Subject(tenants)
    names = tenant_ids(tenants)
    play_tenants(subject.handler, names, runs_each=runs)
    out: dict[str, Any] = {"tenants": tenants, "runs_each": runs}

    subject.scrape_openmetrics()  # warm: first collection of the Prometheus reader
    # Before each measured scrape 10 % of the tenants run, so the scrape has exemplars to place
    # (the SDK keeps a histogram's exemplars for the interval they were recorded in).
    play_tenants(subject.handler, active_share(names, 0.1), seed=3)
    out["text_cpu_s"], text = _cpu(subject.scrape_text)
    play_tenants(subject.handler, active_share(names, 0.1), seed=4)
    out["om_cpu_s"], om = _cpu(subject.scrape_openmetrics)
    # The same scrape with no run since: the exposition alone, without the histogram values the
    # runs queued for the collection (``emit.recorder`` applies them when a reader collects).
    out["om_idle_cpu_s"], _ = _cpu(subject.scrape_openmetrics)
    out["om_exemplars"] = om.count(b"trace_id=")
    out["lines"] = _lines(text)
    out["lines_per_tenant"] = out["lines"] / tenants
    out["text_bytes"], out["om_bytes"] = len(text), len(om)
    out["overflow_lines"] = text.count(semconv.OVERFLOW_VALUE.encode())
    del text, om

    out["quiet"] = _percentiles(_turns(subject, names, lambda: True))
    scrapes = [0]
    done = threading.Event()

    def scrape_loop() -> None:
        while not done.is_set():
            subject.scrape_openmetrics()
            scrapes[0] += 1

    scraper = threading.Thread(target=scrape_loop, daemon=True)
    scraper.start()
    scraped = _turns(subject, names, lambda: scrapes[0] >= 2)
    done.set()
    scraper.join()
    out["scraped"] = _percentiles(scraped)
    out["scrapes_during_turns"] = scrapes[0]

    # An interval in which 10 % of the tenants ran (one run each), then both OTLP collections.
    subject.delta.get_metrics_data()  # the interval starts here, after the latency turns
    play_tenants(subject.handler, active_share(names, 0.1), seed=11)
    cpu, data = _cpu(subject.delta.get_metrics_data)
    out["delta"] = {"collect_cpu_s": cpu, **_otlp(data)}
    cpu, data = _cpu(subject.cumulative.get_metrics_data)
    out["cumulative"] = {"collect_cpu_s": cpu, **_otlp(data)}
    del data
    gc.collect()
    out["rss_mb"] = _rss_mb()
    out["scrape_peak_mb"] = _scrape_peak_mb(subject)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def _scrape_peak_mb(subject: Subject) -> float:
    """Python memory a streamed OpenMetrics scrape allocates at its peak, above steady state."""
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        subject.scrape_streamed()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * resource.getpagesize() / 2**20
    except OSError:
        return float("nan")


def profile_scrape(tenants: int, runs: int) -> None:
    """One OpenMetrics scrape under cProfile, its CPU grouped by the package doing the work."""
    subject = Subject(tenants)
    names = tenant_ids(tenants)
    play_tenants(subject.handler, names, runs_each=runs)
    subject.scrape_openmetrics()
    play_tenants(subject.handler, active_share(names, 0.1), seed=3)
    profiler = cProfile.Profile()
    profiler.enable()
    subject.scrape_openmetrics()
    profiler.disable()
    stats = pstats.Stats(profiler)
    cumulative: dict[str, float] = {}
    for (path, _line, name), (_cc, _nc, _tt, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        for label, (where, function) in PHASES.items():
            if where in path and name == function:
                cumulative[label] = cumulative.get(label, 0.0) + cumtime
    total = cumulative.get("scrape", 0.0)
    served = cumulative.get("served", 0.0)
    parts = {
        "SDK collection (aggregations, exemplar reservoirs)": cumulative.get("collection", 0.0),
        "OTel Prometheus exporter: points -> families": cumulative.get("translation", 0.0),
        "symfonic_otel: exemplar index and placement": cumulative.get("exemplars", 0.0)
        + cumulative.get("index", 0.0),
        "symfonic_otel: per-tenant counters rendered from the store": cumulative.get(
            "tenants", 0.0
        ),
        "prometheus_client: the SDK families' OpenMetrics text": total
        - served
        - cumulative.get("tenants", 0.0),
    }
    print(f"one OpenMetrics scrape at {tenants} tenants: {total:.2f} s under the profiler")
    for label, seconds in parts.items():
        print(f"  {label:<52} {seconds:7.3f} s  {seconds / total:6.1%}")
    print(f"  {'rest (generators, locks)':<52} {total - sum(parts.values()):7.3f} s")
    for line in scrape_memory(subject, names):
        print(line)


def scrape_memory(subject: Subject, names: list[str]) -> list[str]:
    """What one scrape allocates: the SDK's collection, then the whole scrape's peak."""
    import tracemalloc

    play_tenants(subject.handler, active_share(names, 0.1), seed=5)
    gc.collect()
    tracemalloc.start()
    subject.prometheus.collect()  # the SDK's collection, queued for the next scrape
    collected, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    size = subject.scrape_streamed()  # serves the collection above (and collects again)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return [
        f"memory of one OpenMetrics scrape ({size / 1e6:.1f} MB of text, streamed):",
        f"  SDK collection (the points a scrape translates)        {collected / 1e6:7.1f} MB",
        f"  peak allocated during the scrape (collection, families, text)  {peak / 1e6:7.1f} MB",
    ]


PHASES = {
    "scrape": ("symfonic_otel/export/prometheus", "scrape"),
    "served": ("symfonic_otel/export/prometheus", "collect"),
    "tenants": ("symfonic_otel/export/tenant_exposition", "chunks"),
    "collection": ("opentelemetry/sdk/metrics/_internal/export", "collect"),
    "translation": ("opentelemetry/exporter/prometheus", "_translate_to_prometheus"),
    "exemplars": ("symfonic_otel/emit/exemplars", "with_exemplars"),
    "index": ("symfonic_otel/emit/exemplars", "exemplar_index"),
}


def _mb(size: float) -> str:
    return f"{size / 1e6:.2f} MB" if size >= 10_000 else f"{size / 1e3:.1f} KB"


def _row(result: dict[str, Any]) -> list[str]:
    quiet, scraped = result["quiet"], result["scraped"]
    cum, delta = result["cumulative"], result["delta"]
    return [
        f"{result['tenants']:,}",
        f"{result['lines_per_tenant']:.0f}",
        f"{result['lines']:,}",
        f"{result['text_bytes'] / 1e6:.2f} / {result['om_bytes'] / 1e6:.2f}",
        f"{result['text_cpu_s']:.2f} / {result['om_cpu_s']:.2f} "
        f"({result.get('om_idle_cpu_s', float('nan')):.2f})",
        f"{result['rss_mb']:.0f} / {result['peak_rss_mb']:.0f} / {result['scrape_peak_mb']:.1f}",
        f"{quiet['p50']:.2f} / {quiet['p99']:.2f} / {quiet['max']:.1f}",
        f"{scraped['p50']:.2f} / {scraped['p99']:.2f} / {scraped['max']:.1f}",
        f"{cum['collect_cpu_s'] + cum['encode_cpu_s']:.2f} s, {_mb(cum['bytes'])}",
        f"{delta['collect_cpu_s'] + delta['encode_cpu_s']:.3f} s, {_mb(delta['bytes'])}",
        f"{_mb(max(cum['largest'], delta['largest']))} ({_mb(cum['bytes'])})",
    ]


HEADERS = [
    "tenants",
    "lines/tenant",
    "lines",
    "scrape MB text / OM",
    "scrape CPU s text / OM (OM, no run since)",
    "RSS / peak / scrape peak MB",
    "turn ms quiet p50/p99/max",
    "turn ms scraped p50/p99/max",
    "OTLP cumulative CPU, bytes",
    "OTLP delta (10 % active) CPU, bytes",
    "largest OTLP msg (unsplit)",
]


def print_table(results: list[dict[str, Any]]) -> None:
    print("| " + " | ".join(HEADERS) + " |")
    print("|" + "---|" * len(HEADERS))
    for result in results:
        print("| " + " | ".join(_row(result)) + " |")


def run_counts(counts: list[int], runs: int) -> list[dict[str, Any]]:
    """Each tenant count in its own subprocess; the table printed at the end."""
    results = []
    for count in counts:
        started = time.monotonic()
        completed = subprocess.run(
            [sys.executable, __file__, "--one", str(count), "--runs", str(runs)],
            check=True,
            capture_output=True,
            text=True,
        )
        results.append(json.loads(completed.stdout.strip().splitlines()[-1]))
        print(
            f"  {count:,} tenants measured in {time.monotonic() - started:.0f} s", file=sys.stderr
        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", default="10,100,1000", help="comma-separated tenant counts")
    parser.add_argument("--runs", type=int, default=3, help="runs per tenant before measuring")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--profile-scrape", type=int, metavar="TENANTS")
    parser.add_argument("--json", action="store_true", help="also print the raw results")
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(measure(args.one, args.runs)))
        return 0
    if args.profile_scrape:
        profile_scrape(args.profile_scrape, args.runs)
        return 0
    counts = [int(part) for part in args.tenants.split(",") if part.strip()]
    results = run_counts(counts, args.runs)
    print_table(results)
    if args.json:
        print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
