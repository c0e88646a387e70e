"""A core handler behind its own Prometheus scrape endpoint (the SDK's Prometheus reader on a
``prometheus_client`` server), with work running on a background thread: the traffic a live
dashboard test scrapes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry, start_http_server

from symfonic_otel import OTelCallbackHandler


@contextmanager
def scraped_handler(port: int) -> Iterator[OTelCallbackHandler]:
    """The handler, its metrics served on ``127.0.0.1:port``; server and providers shut down at
    the end."""
    registry = CollectorRegistry()
    meter_provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    tracer_provider = TracerProvider()
    handler = OTelCallbackHandler(meter_provider=meter_provider, tracer_provider=tracer_provider)
    server, server_thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        yield handler
    finally:
        server.shutdown()
        server_thread.join(timeout=5)
        meter_provider.shutdown()
        tracer_provider.shutdown()


@contextmanager
def in_background(work: Callable[[], None], stop: threading.Event) -> Iterator[None]:
    """``work`` on a daemon thread until the block ends; then ``stop`` is set and it is joined."""
    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    try:
        yield
    finally:
        stop.set()
        worker.join(timeout=10)
