"""The Prometheus endpoint as a scraper sees it, called in process (its WSGI app, directly).

Status, headers and body per request (text by default, OpenMetrics when asked, gzip when
accepted), the favicon a browser asks for, the hint of a bind failure, the serving thread, and
the reader's queue when a flush and a scrape race: checked without a Prometheus.
"""

from __future__ import annotations

import errno
import gzip
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIServer

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric as PrometheusMetric

from symfonic_otel.export.prometheus import (
    LatestCollectionReader,
    PrometheusEndpoint,
    PrometheusPortError,
    ScrapeCollector,
    bind_hint,
    start_prometheus,
)

OPENMETRICS = "application/openmetrics-text; version=1.0.0"
TEXT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass
class Served:
    provider: MeterProvider
    reader: LatestCollectionReader
    endpoint: PrometheusEndpoint
    server: WSGIServer
    thread: threading.Thread


@dataclass
class Response:
    status: str
    headers: list[tuple[str, str]]
    body: bytes
    calls: list[tuple[Any, ...]] = field(default_factory=list)


def _serve(host: str) -> Iterator[Served]:
    reader, endpoint, server, thread = start_prometheus(host, 0)
    provider = MeterProvider(metric_readers=[reader])
    try:
        yield Served(provider, reader, endpoint, server, thread)
    finally:
        provider.shutdown()
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    yield from _serve("127.0.0.1")


def _get(endpoint: PrometheusEndpoint, path: str = "/metrics", **environ: str) -> Response:
    calls: list[tuple[Any, ...]] = []

    def start_response(*args: Any) -> Callable[[bytes], object]:
        calls.append(args)
        return lambda data: None

    chunks = endpoint({"REQUEST_METHOD": "GET", "PATH_INFO": path, **environ}, start_response)
    body = b"".join(chunks)
    assert len(calls) == 1
    status, headers = calls[0][:2]
    return Response(status, headers, body, calls)


def _count(served: Served, name: str = "demo_requests") -> None:
    served.provider.get_meter("demo").create_counter(name).add(3)


def test_a_default_scrape_is_the_text_format(served: Served) -> None:
    _count(served, "text_requests")
    response = _get(served.endpoint)
    assert (response.status, response.headers) == ("200 OK", [("Content-Type", TEXT_TYPE)])
    text = response.body.decode()
    assert "# TYPE text_requests_total counter" in text
    sample = next(line for line in text.splitlines() if line.startswith("text_requests_total{"))
    assert sample.endswith("} 3.0")
    assert "# EOF" not in text


def test_openmetrics_when_asked_ends_with_one_eof(served: Served) -> None:
    _count(served)
    response = _get(served.endpoint, HTTP_ACCEPT=OPENMETRICS)
    assert response.status == "200 OK"
    assert response.headers == [
        (
            "Content-Type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores",
        )
    ]
    text = response.body.decode()
    assert "# TYPE demo_requests counter" in text
    assert text.endswith("# EOF\n") and text.count("# EOF") == 1


def test_the_body_uses_the_name_escaping_its_content_type_announces(served: Served) -> None:
    _count(served, "escaped_requests")
    response = _get(served.endpoint, HTTP_ACCEPT=OPENMETRICS + "; escaping=values")
    assert response.headers == [
        (
            "Content-Type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=values",
        )
    ]
    assert "U__escaped__requests__total{" in response.body.decode()


def test_gzip_when_accepted(served: Served) -> None:
    _count(served)
    plain = _get(served.endpoint).body
    response = _get(served.endpoint, HTTP_ACCEPT_ENCODING="deflate, gzip")
    assert response.headers == [("Content-Type", TEXT_TYPE), ("Content-Encoding", "gzip")]
    assert gzip.decompress(response.body) == plain


def test_the_favicon_is_an_empty_200(served: Served) -> None:
    _count(served)
    response = _get(served.endpoint, "/favicon.ico")
    assert response.calls == [("200 OK", [])]
    assert response.body == b""
    assert b"demo_requests" in _get(served.endpoint, "/FAVICON.ICO").body


def test_scrape_picks_its_format_when_given_no_encoder(served: Served) -> None:
    _count(served)
    openmetrics = b"".join(served.endpoint.scrape(True)).decode()
    assert "# TYPE demo_requests counter" in openmetrics
    assert openmetrics.endswith("# EOF\n") and openmetrics.count("# EOF") == 1
    text = b"".join(served.endpoint.scrape(False)).decode()
    assert "# TYPE demo_requests_total counter" in text and "# EOF" not in text


def test_a_collection_error_is_raised_before_the_response_starts() -> None:
    """The server answers 500 for it, rather than a 200 cut short."""

    class Broken:
        def collect(self) -> Iterator[PrometheusMetric]:
            raise RuntimeError("collection failed")
            yield  # pragma: no cover

    registry = CollectorRegistry()
    registry.register(Broken())  # type: ignore[arg-type]
    calls: list[object] = []
    with pytest.raises(RuntimeError, match="collection failed"):
        PrometheusEndpoint(registry)({"PATH_INFO": "/metrics"}, lambda *a: calls.append(a))
    assert calls == []


def test_the_server_serves_on_a_named_daemon_thread_quietly(
    capfd: pytest.CaptureFixture[str],
) -> None:
    for served in _serve("127.0.0.1"):  # a server of its own: started by this test
        assert served.thread.name == "symfonic-otel-prometheus"
        assert served.thread.daemon is True
        assert isinstance(served.server, ThreadingMixIn) and served.server.daemon_threads
        _count(served)
        port = served.server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            assert b"demo_requests_total" in response.read()
    captured = capfd.readouterr()
    assert (captured.out, captured.err) == ("", "")  # no access log


def test_the_server_stops_within_its_short_poll_of_being_asked() -> None:
    """Right after a request the serving loop waits a whole poll interval before it sees a
    shutdown: 50 ms here, not the standard library's 0.5 s added to every shutdown."""
    for served in _serve("127.0.0.1"):
        port = served.server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/favicon.ico", timeout=10):
            pass
        started = time.monotonic()
        served.server.shutdown()
        assert time.monotonic() - started < 0.25


def test_an_ipv6_host_is_served_over_ipv6() -> None:
    for served in _serve("::1"):
        assert served.server.address_family == socket.AF_INET6
        port = served.server.server_address[1]
        with urllib.request.urlopen(f"http://[::1]:{port}/favicon.ico", timeout=10) as response:
            assert response.status == 200


def test_a_busy_port_says_so_and_how_to_fix_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PrometheusPortError) as raised:
            start_prometheus("127.0.0.1", port)
    assert raised.value.errno == errno.EADDRINUSE
    assert raised.value.strerror == (
        f"prometheus_port {port} on prometheus_host '127.0.0.1' cannot be bound: "
        "Address already in use (another process serves that port: pick another, "
        "or 0 for a free one)"
    )
    assert isinstance(raised.value, ValueError)


def test_a_host_not_of_this_machine_says_so() -> None:
    with pytest.raises(PrometheusPortError) as raised:
        start_prometheus("192.0.2.1", 0)  # TEST-NET-1: no machine's own address
    assert raised.value.errno == errno.EADDRNOTAVAIL
    assert raised.value.strerror == (
        "prometheus_port 0 on prometheus_host '192.0.2.1' cannot be bound: "
        "Cannot assign requested address (the host is not an address of this machine: "
        "use 127.0.0.1, 0.0.0.0 or one of its own addresses)"
    )


@pytest.mark.parametrize(
    ("error", "hint"),
    [
        (
            socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
            "the host is not an address of this machine: use 127.0.0.1, 0.0.0.0 "
            "or one of its own addresses",
        ),
        (
            OSError(errno.EACCES, "Permission denied"),
            "that port needs privileges: pick one above 1023, or 0 for a free one",
        ),
        (
            OSError(errno.EADDRINUSE, "Address already in use"),
            "another process serves that port: pick another, or 0 for a free one",
        ),
        (
            OSError(errno.EPERM, "Operation not permitted"),
            "check the host and the port; 0 picks a free port",
        ),
    ],
)
def test_bind_hints(error: OSError, hint: str) -> None:
    assert bind_hint(error) == hint


def test_a_flush_outside_a_scrape_is_kept_for_the_next_one() -> None:
    for served in _serve("127.0.0.1"):  # a fresh reader: this flush comes before any scrape
        _count(served)
        served.provider.force_flush()
        assert served.reader.take_latest() is not None
        _get(served.endpoint)  # a scrape, then another flush: still kept
        served.provider.force_flush()
        assert served.reader.take_latest() is not None


def test_a_flush_racing_a_scrape_is_not_queued_behind_it() -> None:
    """A flush from another thread while a scrape translates is dropped, not left queued."""
    families = CollectorRegistry(auto_describe=True)
    reader = LatestCollectionReader(families)
    provider = MeterProvider(metric_readers=[reader])
    flushed: list[bool] = []

    class FlushDuringScrape:
        def collect(self) -> Iterator[PrometheusMetric]:
            racer = threading.Thread(target=lambda: flushed.append(provider.force_flush()))
            racer.start()
            racer.join(5)
            return iter(())

    families.register(FlushDuringScrape())  # type: ignore[arg-type]
    registry = CollectorRegistry()
    registry.register(ScrapeCollector(families, reader))
    endpoint = PrometheusEndpoint(registry)
    try:
        provider.get_meter("demo").create_counter("demo_requests").add(1)
        flushed.clear()  # registering collected once, to learn the names
        text = _get(endpoint).body.decode()
        assert flushed == [True]
        assert text.count("demo_requests_total{") == 1
        # the SDK's queue of collections for the next scrape: the racing flush is not in it
        assert len(reader._collector._metrics_datas) == 0
        assert reader.take_latest() is None
    finally:
        provider.shutdown()
