"""The Prometheus endpoint: each scrape serves one collection, the latest, with its exemplars.

The SDK's ``PrometheusMetricReader`` queues every collection it is given and a scrape serves the
whole queue, re-yielding its families after each queued collection. A
``MeterProvider.force_flush()`` (``Telemetry.force_flush``, a shutdown, a test) collects for
every reader, so the next scrape served every series two or three times, older values first;
Prometheus keeps the first sample of a duplicate, and counters read stale. Here:

* ``LatestCollectionReader`` keeps at most one collection queued: a newer one replaces it, and
  a collection arriving from another thread while a scrape translates is dropped (that scrape
  serves its own, fresher, collection);
* ``ScrapeCollector`` (the served registry's only collector) runs one scrape at a time, so two
  concurrent scrapes never queue two collections for one translation, and puts the exemplars of
  the collection it served on their bucket samples.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.metrics.export import MetricReader, MetricsData
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric as PrometheusMetric

from symfonic_otel.emit.exemplars import ExemplarReader, exemplar_index, with_exemplars

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

__all__ = ["LatestCollectionReader", "PrometheusPortError", "ScrapeCollector", "start_prometheus"]


class LatestCollectionReader(ExemplarReader):
    """The exporter's reader, with at most one collection waiting for the next scrape."""

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(registry)
        self._queue_lock = threading.Lock()
        self._scraping: int | None = None  # ident of the thread translating a scrape

    def scrape_started(self) -> None:
        with self._queue_lock:
            self._scraping = threading.get_ident()

    def scrape_ended(self) -> None:
        with self._queue_lock:
            self._scraping = None

    def _receive_metrics(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> None:
        if metrics_data is None:
            return
        with self._queue_lock:
            if self._scraping is not None and self._scraping != threading.get_ident():
                return  # a flush during a scrape: the scrape serves its own collection
            queued = getattr(self._collector, "_metrics_datas", None)
            if queued is not None:
                queued.clear()  # only the latest collection is ever served
            super()._receive_metrics(metrics_data, timeout_millis, **kwargs)


class ScrapeCollector:
    """Serves the families of ``inner`` (the reader's registry), one scrape at a time."""

    def __init__(self, inner: CollectorRegistry, reader: LatestCollectionReader) -> None:
        self._inner = inner
        self._reader = reader
        self._lock = threading.Lock()

    def describe(self) -> Iterable[PrometheusMetric]:
        return ()  # no collection just to learn the names at registration

    def collect(self) -> Iterator[PrometheusMetric]:
        with self._lock:
            self._reader.scrape_started()
            try:
                families = list(self._inner.collect())  # collecting runs the reader first
            finally:
                self._reader.scrape_ended()
            with_exemplars(families, exemplar_index(self._reader.take_latest()))
        yield from families


class PrometheusPortError(OSError, ValueError):
    """The metrics port cannot be bound (busy, or not allowed): an ``OSError`` with the errno,
    and a ``ValueError`` as it was before."""


def start_prometheus(host: str, port: int) -> tuple[MetricReader, WSGIServer, threading.Thread]:
    """A Prometheus reader on its own registry, served by prometheus_client's HTTP server.

    A dedicated ``CollectorRegistry`` keeps two configurations in one process (tests, or an app
    that reconfigures) from colliding on the global registry, and the scrape shows only this
    package's SDK metrics. Older readers without a ``registry`` argument use the default
    registry, without exemplars or the one-collection guarantee.
    """
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import REGISTRY, start_http_server

    reader: PrometheusMetricReader
    if "registry" in inspect.signature(PrometheusMetricReader).parameters:
        families = CollectorRegistry(auto_describe=True)
        reader = LatestCollectionReader(families)
        registry = CollectorRegistry()
        registry.register(ScrapeCollector(families, reader))
    else:  # pragma: no cover - exporter releases before the registry argument
        registry = REGISTRY
        reader = PrometheusMetricReader()
    try:
        started = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        reader.shutdown()
        raise PrometheusPortError(
            exc.errno or 0,
            f"prometheus_port {port} on prometheus_host {host!r} cannot be bound: "
            f"{exc.strerror or exc} (pick another, or 0 for a free one)",
        ) from exc
    if not isinstance(started, tuple):  # pragma: no cover - prometheus_client < 0.17
        reader.shutdown()
        raise RuntimeError("prometheus_client >= 0.17 is required to close the metrics server")
    server, thread = started
    return reader, server, thread
