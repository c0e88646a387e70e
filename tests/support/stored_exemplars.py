"""A real Prometheus storing the exemplars of a process's endpoint, and reading them back.

Exemplars prove a metric point names a trace; only a real Prometheus shows which ones survive
the scrape and storage (``--enable-feature=exemplar-storage``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from symfonic_otel.export.setup import Telemetry
from tests.support.prometheus_support import PrometheusServer


@dataclass(frozen=True)
class StoredExemplars:
    """A Prometheus that was up and scraping at ``started`` (epoch seconds)."""

    prometheus: PrometheusServer
    started: float

    def of(self, query: str) -> list[Any]:
        """The exemplar series stored for ``query`` since the start (a minute's slack each way)."""
        window = [("start", str(self.started - 60)), ("end", str(time.time() + 60))]
        found = self.prometheus.api("query_exemplars", [("query", query), *window])
        return list(found or [])

    def wait_for(self, query: str) -> list[Any]:
        """The exemplar series of ``query`` once Prometheus has any (fails after 30 s)."""
        series = self.prometheus.wait_for(lambda: self.of(query), timeout_s=30)
        assert series, self.prometheus.log_tail()
        return series


def trace_ids(series: list[Any]) -> set[str]:
    """The trace ids the exemplars of ``series`` name."""
    return {e["labels"]["trace_id"] for entry in series for e in entry["exemplars"]}


@contextmanager
def storing_exemplars(workdir: Path, telemetry: Telemetry) -> Iterator[StoredExemplars]:
    """Prometheus scraping ``telemetry``'s endpoint with exemplar storage on, once it is up."""
    target = f"127.0.0.1:{telemetry.prometheus_port}"
    with PrometheusServer(
        workdir, scrape_targets=[target], extra_args=["--enable-feature=exemplar-storage"]
    ) as prometheus:
        assert prometheus.wait_for(lambda: prometheus.query("up == 1"), timeout_s=30)
        yield StoredExemplars(prometheus, started=time.time())
