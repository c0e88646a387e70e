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
  the collection it served on their bucket samples;
* ``PrometheusEndpoint`` serves, in one response, those SDK families and the per-tenant counters
  rendered from the package's own store (``tenant_exposition``): the reader is marked so the
  SDK collection leaves them out, and the response is streamed (gzip when asked), so a scrape
  holds at most one copy of the text.
"""

from __future__ import annotations

import errno
import socket
import threading
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator
from socketserver import ThreadingMixIn
from typing import Any, Final
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from opentelemetry.sdk.metrics.export import MetricsData
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, generate_latest, gzip_accepted
from prometheus_client.metrics_core import Metric as PrometheusMetric
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from symfonic_otel.emit.exemplars import ExemplarReader, exemplar_index, with_exemplars
from symfonic_otel.emit.reader_hook import RENDERS_TENANT_COUNTERS
from symfonic_otel.emit.tenant_hub import TenantHub
from symfonic_otel.export.tenant_exposition import TenantExposition

__all__ = [
    "LatestCollectionReader",
    "PrometheusEndpoint",
    "PrometheusPortError",
    "ScrapeCollector",
    "start_prometheus",
]

_EOF: Final = b"# EOF\n"
# How often the server's loop checks for shutdown: ``shutdown()`` waits up to one interval (the
# standard library's 0.5 s would be added to every ``Telemetry.shutdown()``, the SIGTERM budget's
# included); 20 wake-ups a second cost nothing measurable.
_SHUTDOWN_POLL_S: Final = 0.05


class LatestCollectionReader(ExemplarReader):
    """The exporter's reader, with at most one collection waiting for the next scrape."""

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(registry)
        setattr(self, RENDERS_TENANT_COUNTERS, True)  # the endpoint renders them itself
        self._queue_lock = threading.Lock()
        self._scraping: int | None = None  # ident of the thread translating a scrape

    def scrape_started(self) -> None:
        with self._queue_lock:
            self._scraping = threading.get_ident()

    def scrape_ended(self) -> None:
        with self._queue_lock:
            self._scraping = None

    def _receive_metrics(
        self,
        metrics_data: MetricsData,
        timeout_millis: float = 10_000,  # pragma: no mutate: the SDK's reader ignores it
        **kwargs: Any,
    ) -> None:
        if metrics_data is None:
            return
        with self._queue_lock:
            if self._scraping is not None and self._scraping != threading.get_ident():
                return  # a flush during a scrape: the scrape serves its own collection
            queued = getattr(
                self._collector,
                "_metrics_datas",
                None,  # pragma: no mutate: the SDK's collector has it; a later one may not
            )
            if queued is not None:
                queued.clear()  # only the latest collection is ever served
            super()._receive_metrics(
                metrics_data,
                timeout_millis,  # pragma: no mutate: the SDK's reader ignores it
                **kwargs,  # pragma: no mutate: as above
            )


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


class PrometheusEndpoint:
    """The WSGI app of the scrape endpoint: the SDK's families, then the per-tenant counters.

    Scrapes run one at a time (the SDK collection and the render cache are not shared by two).
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry
        self._exposition: TenantExposition | None = None
        self._lock = threading.Lock()

    def bind(self, hub: TenantHub) -> None:
        """Serve ``hub``'s per-tenant counters (the MeterProvider this endpoint reads)."""
        self._exposition = TenantExposition(hub)

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., object]
    ) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/favicon.ico":
            start_response("200 OK", [])
            return [b""]
        # A header the request lacks reads as empty: as None or any text that names no format.
        encoder, content_type = choose_encoder(
            environ.get(
                "HTTP_ACCEPT",
                "",  # pragma: no mutate: a missing header; prometheus_client reads None alike
            )
        )
        openmetrics = content_type.startswith("application/openmetrics-text")
        gzip = gzip_accepted(
            environ.get(
                "HTTP_ACCEPT_ENCODING",
                "",  # pragma: no mutate: as above
            )
        )
        headers = [("Content-Type", content_type)]
        if gzip:
            headers.append(("Content-Encoding", "gzip"))
        body = self.scrape(openmetrics, encoder)
        first = next(body)  # the SDK's collection runs here: its errors are a 500, not a cut
        start_response("200 OK", headers)
        return _response(first, body, gzip)

    def scrape(
        self, openmetrics: bool, encoder: Callable[[CollectorRegistry], bytes] | None = None
    ) -> Generator[bytes, None, None]:
        """One scrape's body in chunks; the scrape lock is held until its last chunk."""
        if encoder is None:
            encoder = generate_openmetrics if openmetrics else generate_latest
        with self._lock:
            sdk = encoder(self._registry)
            yield sdk.removesuffix(_EOF)  # only OpenMetrics ends with it
            if self._exposition is not None:
                for text in self._exposition.chunks(openmetrics):
                    yield text.encode()
            if openmetrics:
                yield _EOF


def _response(first: bytes, rest: Generator[bytes, None, None], gzip: bool) -> Iterator[bytes]:
    """The body as sent; closing it (the server does, even on a client gone) frees the scrape."""
    try:
        if not gzip:
            yield first
            yield from rest
            return
        compressor = zlib.compressobj(wbits=31)  # the gzip container
        yield compressor.compress(first)
        for chunk in rest:
            yield compressor.compress(chunk)
        yield compressor.flush()
    finally:
        rest.close()


class PrometheusPortError(OSError, ValueError):
    """The metrics port cannot be bound (busy, or not allowed): an ``OSError`` with the errno,
    and a ``ValueError`` as it was before."""


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """A library prints nothing on its own: no access log on stderr."""


def start_prometheus(
    host: str, port: int
) -> tuple[LatestCollectionReader, PrometheusEndpoint, WSGIServer, threading.Thread]:
    """A Prometheus reader on its own registry, served by this package's endpoint.

    A dedicated ``CollectorRegistry`` keeps two configurations in one process (tests, or an app
    that reconfigures) from colliding on the global registry; the endpoint serves this
    package's SDK metrics and, once bound to the provider's hub, the per-tenant counters.
    """
    families = CollectorRegistry(auto_describe=True)  # pragma: no mutate: describes nothing yet
    reader = LatestCollectionReader(families)
    registry = CollectorRegistry()
    registry.register(ScrapeCollector(families, reader))
    endpoint = PrometheusEndpoint(registry)
    server_class = type(
        "_Server",  # pragma: no mutate: the class's name is seen nowhere
        (_Server,),
        {"address_family": _family(host)},
    )
    try:
        server: WSGIServer = make_server(
            host, port, endpoint, server_class, handler_class=_QuietHandler
        )
    except OSError as exc:
        reader.shutdown()
        raise PrometheusPortError(
            exc.errno or 0,
            f"prometheus_port {port} on prometheus_host {host!r} cannot be bound: "
            f"{exc.strerror or exc} ({bind_hint(exc)})",
        ) from exc
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": _SHUTDOWN_POLL_S},
        name="symfonic-otel-prometheus",
        daemon=True,
    )
    thread.start()
    return reader, endpoint, server, thread


def bind_hint(exc: OSError) -> str:
    """What to change when binding failed, by the error's kind: the port or the host."""
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return (
            "the host is not an address of this machine: use 127.0.0.1, 0.0.0.0 "
            "or one of its own addresses"
        )
    if exc.errno == errno.EACCES:
        return "that port needs privileges: pick one above 1023, or 0 for a free one"
    if exc.errno == errno.EADDRINUSE:
        return "another process serves that port: pick another, or 0 for a free one"
    return "check the host and the port; 0 picks a free port"


def _family(host: str) -> socket.AddressFamily:
    """IPv6 for an IPv6 host, as prometheus_client's own server chooses (the port has no say)."""
    try:
        infos = socket.getaddrinfo(
            host,
            None,  # pragma: no mutate: any port, or none, resolves to the same family
            type=socket.SOCK_STREAM,  # pragma: no mutate: the first answer's family is the same
            flags=socket.AI_PASSIVE,  # pragma: no mutate: only a None host reads it; never one
        )
    except OSError:
        return socket.AF_INET
    return infos[0][0]  # never empty: getaddrinfo raises instead
