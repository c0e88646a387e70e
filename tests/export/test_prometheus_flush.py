"""A flush never makes the Prometheus endpoint serve a series twice, or an old value.

Any ``MeterProvider.force_flush()`` (``Telemetry.force_flush``, a shutdown, a test) collects for
the Prometheus reader too. The endpoint must still serve each series once, at its live value:
checked on the scraped text, and with a real Prometheus scraping between flushes (its own
``prometheus_target_scrapes_sample_duplicate_timestamp_total`` stays 0 and the runs counter
reads what was played).
"""

from __future__ import annotations

import collections
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from symfonic_otel.export.setup import Telemetry, configure_telemetry
from tests.support.prometheus_support import PrometheusServer, require_binary

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from tenant_load import play_tenants, tenant_handler, tenant_ids

OPENMETRICS = "application/openmetrics-text; version=1.0.0"
RUNS = "symfonic_agent_runs"
DUPLICATES = "prometheus_target_scrapes_sample_duplicate_timestamp_total"


@pytest.fixture
def served() -> Iterator[Telemetry]:
    telemetry = configure_telemetry(otlp=False, prometheus_port=0, set_global=False)
    with telemetry:
        yield telemetry


def _scrape(port: int | None, accept: str | None = None) -> str:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    if accept:
        request.add_header("Accept", accept)
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(response.read().decode())


def _series(text: str, accept: str | None) -> collections.Counter[tuple[str, tuple[str, ...]]]:
    """How often each (sample name, labels) appears in one scrape."""
    if accept:
        from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse
    else:
        parse = text_string_to_metric_families
    seen: collections.Counter[tuple[str, tuple[str, ...]]] = collections.Counter()
    for family in parse(text):
        for sample in family.samples:
            seen[(sample.name, tuple(sorted(f"{k}={v}" for k, v in sample.labels.items())))] += 1
    return seen


def _runs_total(text: str) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        if family.name == RUNS
        for sample in family.samples
        if sample.name == f"{RUNS}_total"
    )


@pytest.mark.parametrize("accept", [None, OPENMETRICS], ids=["text", "openmetrics"])
def test_a_scrape_after_flushes_serves_each_series_once_at_its_live_value(
    served: Telemetry, accept: str | None
) -> None:
    handler = tenant_handler(served.tracer_provider, served.meter_provider, max_tenants=100)
    play_tenants(handler, tenant_ids(3), seed=1)
    assert served.force_flush()
    assert served.force_flush()
    played = 3 + play_tenants(handler, tenant_ids(3), runs_each=4, seed=2)

    text = _scrape(served.prometheus_port, accept)
    repeated = {key: count for key, count in _series(text, accept).items() if count > 1}
    assert not repeated, (
        f"{len(repeated)} series served more than once, e.g. {next(iter(repeated))}"
    )
    assert _runs_total(_scrape(served.prometheus_port)) == played


def test_a_flush_racing_scrapes_never_duplicates_a_series(served: Telemetry) -> None:
    handler = tenant_handler(served.tracer_provider, served.meter_provider, max_tenants=100)
    play_tenants(handler, tenant_ids(20), seed=3)
    stop = threading.Event()

    def flush_forever() -> None:
        while not stop.is_set():
            served.meter_provider.force_flush()

    flusher = threading.Thread(target=flush_forever, daemon=True)
    flusher.start()
    try:
        for _ in range(6):
            counts = _series(_scrape(served.prometheus_port), None)
            assert max(counts.values()) == 1
    finally:
        stop.set()
        flusher.join(10)


def _prometheus_self_metric(prometheus: PrometheusServer, name: str) -> float:
    """One of Prometheus' own counters, read from its /metrics (it must be there)."""
    with urllib.request.urlopen(f"{prometheus.url}/metrics", timeout=10) as response:
        text = response.read().decode()
    values = [
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    ]
    assert values, f"Prometheus serves no {name}"
    return sum(values)


def _first_scrape_after(prometheus: PrometheusServer, moment: float) -> float | None:
    """The timestamp of the first scrape of the target that started after ``moment``."""

    def newest() -> float | None:
        result = prometheus.query("timestamp(up)")
        stamp = float(result[0]["value"][1]) if result else 0.0
        return stamp if stamp > moment else None

    if prometheus.wait_for(newest, timeout_s=15, interval_s=0.2) is None:
        return None
    raw = prometheus.query("up[30s]")  # the raw samples, one per scrape
    stamps = [float(t) for entry in raw for t, _ in entry["values"] if float(t) > moment]
    return min(stamps) if stamps else None


def test_real_prometheus_reads_live_counters_between_flushes(
    served: Telemetry, tmp_path: Path
) -> None:
    require_binary("prometheus")
    handler = tenant_handler(served.tracer_provider, served.meter_provider, max_tenants=100)
    target = f"127.0.0.1:{served.prometheus_port}"
    with PrometheusServer(tmp_path, scrape_targets=[target]) as prometheus:
        assert prometheus.wait_for(lambda: prometheus.query("up == 1"), timeout_s=30)
        played = 0
        for seed in range(4):
            # A flush, then runs: the next scrape must serve the runs, not the flushed values.
            assert served.force_flush()
            played += play_tenants(handler, tenant_ids(5), runs_each=seed + 1, seed=seed)
            scraped_at = _first_scrape_after(prometheus, time.time())
            assert scraped_at is not None, prometheus.log_tail()
            result = prometheus.query(f"sum({RUNS}_total)", at=scraped_at)
            assert result and float(result[0]["value"][1]) == played, (seed, result, played)
        assert _prometheus_self_metric(prometheus, DUPLICATES) == 0
