"""A real OTLP receiver for tests: gRPC and HTTP/protobuf on free loopback ports.

The exporters under test speak to it exactly as they would to a collector, so a test sees the
bytes that leave the process, not what the SDK meant to send. Every decoded request and every raw
byte received is kept (privacy tests grep the raw bytes), along with the gRPC metadata / HTTP
headers (to prove ``OTEL_EXPORTER_OTLP_HEADERS`` arrives). ``refused_endpoint`` and
``HangingServer`` stand in for a collector that is down or stuck, for reliability tests.
"""

from __future__ import annotations

import gzip
import http.server
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any, Final, Self, TypeVar

import grpc
from google.protobuf.message import Message
from opentelemetry.proto.collector.metrics.v1 import (
    metrics_service_pb2,
    metrics_service_pb2_grpc,
)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanProto
from opentelemetry.proto.trace.v1.trace_pb2 import Status as StatusProto

from tests.support.wire_server import POLL_S

ExportTraceServiceRequest = trace_service_pb2.ExportTraceServiceRequest
ExportMetricsServiceRequest = metrics_service_pb2.ExportMetricsServiceRequest
_Answer = TypeVar("_Answer", bound=Message)


# --- decoding helpers ---------------------------------------------------------------------------


def any_value(value: AnyValue) -> Any:
    """An OTLP ``AnyValue`` as the Python value it was set from."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    return getattr(value, kind)


def attributes(pairs: Iterator[KeyValue] | Any) -> dict[str, Any]:
    return {pair.key: any_value(pair.value) for pair in pairs}


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str  # "" for a root span
    kind: str  # "INTERNAL", "CLIENT", ...
    status_code: str  # "UNSET", "OK", "ERROR"
    status_message: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    start_time_unix_nano: int
    end_time_unix_nano: int
    resource: dict[str, Any]
    scope: str


@dataclass(frozen=True)
class ReceivedPoint:
    name: str
    unit: str
    kind: str  # "sum", "gauge", "histogram"
    attributes: dict[str, Any]
    value: float | None  # sum / gauge points
    count: int | None  # histogram points
    sum: float | None
    bucket_counts: tuple[int, ...]
    explicit_bounds: tuple[float, ...]
    temporality: str  # "CUMULATIVE", "DELTA" or "" (gauge)
    is_monotonic: bool | None
    resource: dict[str, Any]
    start_time_unix_nano: int = 0
    exemplar_trace_ids: tuple[str, ...] = ()  # hex, as the trace's id reads elsewhere


def _span_kind(kind: int) -> str:
    return SpanProto.SpanKind.Name(kind).removeprefix("SPAN_KIND_")


def _status(code: int) -> str:
    return StatusProto.StatusCode.Name(code).removeprefix("STATUS_CODE_")


def _temporality(value: int) -> str:
    from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality

    return AggregationTemporality.Name(value).removeprefix("AGGREGATION_TEMPORALITY_")


def _scoped(groups: Iterable[Any], scopes: str, items: str) -> Iterator[tuple[Any, Any, Any]]:
    """OTLP's nesting flattened: each item (span, metric) with its resource's attributes and
    its scope group, from resource groups whose scope groups are ``scopes``, holding ``items``."""
    for group in groups:
        resource = attributes(group.resource.attributes)
        for scoped in getattr(group, scopes):
            for item in getattr(scoped, items):
                yield resource, scoped, item


def spans_of(requests: list[ExportTraceServiceRequest]) -> list[ReceivedSpan]:
    return [
        ReceivedSpan(
            name=span.name,
            trace_id=span.trace_id.hex(),
            span_id=span.span_id.hex(),
            parent_span_id=span.parent_span_id.hex(),
            kind=_span_kind(span.kind),
            status_code=_status(span.status.code),
            status_message=span.status.message,
            attributes=attributes(span.attributes),
            events=[(e.name, attributes(e.attributes)) for e in span.events],
            start_time_unix_nano=span.start_time_unix_nano,
            end_time_unix_nano=span.end_time_unix_nano,
            resource=resource,
            scope=scope_spans.scope.name,
        )
        for request in requests
        for resource, scope_spans, span in _scoped(request.resource_spans, "scope_spans", "spans")
    ]


def points_of(requests: list[ExportMetricsServiceRequest]) -> list[ReceivedPoint]:
    out: list[ReceivedPoint] = []
    for request in requests:
        for resource, _, metric in _scoped(request.resource_metrics, "scope_metrics", "metrics"):
            kind = metric.WhichOneof("data")
            data = getattr(metric, kind)
            temporality = (
                _temporality(data.aggregation_temporality) if kind in ("sum", "histogram") else ""
            )
            monotonic = data.is_monotonic if kind == "sum" else None
            for point in data.data_points:
                histogram = kind == "histogram"
                number: float | None = None
                if not histogram:
                    which = point.WhichOneof("value")
                    number = float(getattr(point, which)) if which else None
                out.append(
                    ReceivedPoint(
                        name=metric.name,
                        unit=metric.unit,
                        kind=kind,
                        attributes=attributes(point.attributes),
                        value=number,
                        count=point.count if histogram else None,
                        sum=point.sum if histogram else None,
                        bucket_counts=tuple(point.bucket_counts) if histogram else (),
                        explicit_bounds=tuple(point.explicit_bounds) if histogram else (),
                        temporality=temporality,
                        is_monotonic=monotonic,
                        resource=resource,
                        start_time_unix_nano=point.start_time_unix_nano,
                        exemplar_trace_ids=tuple(e.trace_id.hex() for e in point.exemplars),
                    )
                )
    return out


# --- the receiver ---------------------------------------------------------------------------------


@dataclass
class _Store:
    """Everything received, across both transports, guarded by one lock."""

    traces: list[ExportTraceServiceRequest] = field(default_factory=list)
    metrics: list[ExportMetricsServiceRequest] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    changed: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self.changed = threading.Condition(self.lock)

    def add(self, message: Message, raw: bytes, headers: dict[str, str]) -> None:
        with self.changed:
            if isinstance(message, ExportTraceServiceRequest):
                self.traces.append(message)
            else:
                self.metrics.append(message)  # type: ignore[arg-type]
            self.raw.append(raw)
            self.headers.append(headers)
            self.changed.notify_all()


class OtlpReceiver:
    """Base: the stored data and the query helpers shared by both transports."""

    protocol = ""

    def __init__(self) -> None:
        self._store = _Store()

    @property
    def endpoint(self) -> str:
        raise NotImplementedError

    # What the exporter sent.
    def trace_requests(self) -> list[ExportTraceServiceRequest]:
        with self._store.lock:
            return list(self._store.traces)

    def metric_requests(self) -> list[ExportMetricsServiceRequest]:
        with self._store.lock:
            return list(self._store.metrics)

    def spans(self) -> list[ReceivedSpan]:
        return spans_of(self.trace_requests())

    def points(self) -> list[ReceivedPoint]:
        return points_of(self.metric_requests())

    def raw_bytes(self) -> bytes:
        """Every request body received (decompressed), concatenated: for grep-style checks."""
        with self._store.lock:
            return b"".join(self._store.raw)

    def headers(self) -> list[dict[str, str]]:
        """Request headers (HTTP) or invocation metadata (gRPC), keys lower-cased."""
        with self._store.lock:
            return [dict(h) for h in self._store.headers]

    def wait_for(self, predicate: Callable[[OtlpReceiver], bool], timeout: float = 10.0) -> bool:
        """Block until ``predicate(self)`` holds or ``timeout`` passes; returns the last result."""
        deadline = time.monotonic() + timeout
        while True:
            if predicate(self):
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with self._store.changed:
                self._store.changed.wait(min(remaining, 0.1))

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Keeping:
    """What both collector services do with a request: keep it with its metadata."""

    def __init__(self, store: _Store) -> None:
        self._store = store

    def _keep(self, request: Message, context: grpc.ServicerContext, answer: _Answer) -> _Answer:
        self._store.add(request, request.SerializeToString(), _metadata(context))
        return answer


class _TraceService(_Keeping, trace_service_pb2_grpc.TraceServiceServicer):
    def Export(  # gRPC's method name
        self, request: ExportTraceServiceRequest, context: grpc.ServicerContext
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        return self._keep(request, context, trace_service_pb2.ExportTraceServiceResponse())


class _MetricsService(_Keeping, metrics_service_pb2_grpc.MetricsServiceServicer):
    def Export(  # gRPC's method name
        self, request: ExportMetricsServiceRequest, context: grpc.ServicerContext
    ) -> metrics_service_pb2.ExportMetricsServiceResponse:
        return self._keep(request, context, metrics_service_pb2.ExportMetricsServiceResponse())


def _metadata(context: grpc.ServicerContext) -> dict[str, str]:
    return {
        key.lower(): value if isinstance(value, str) else value.decode("latin-1")
        for key, value in context.invocation_metadata()
    }


# What a collector accepts in one message by default: gRPC's receive limit.
GRPC_DEFAULT_MAX_RECEIVE = 4 * 1024 * 1024


class GrpcOtlpReceiver(OtlpReceiver):
    """OTLP/gRPC: the trace and metrics collector services on ``127.0.0.1:<free port>``.

    Messages larger than ``max_receive_bytes`` (gRPC's default 4 MiB, as in a collector) are
    refused by gRPC itself with ``RESOURCE_EXHAUSTED``.
    """

    protocol = "grpc"

    def __init__(self, max_receive_bytes: int = GRPC_DEFAULT_MAX_RECEIVE) -> None:
        super().__init__()
        self.max_receive_bytes = max_receive_bytes
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=4),
            options=[("grpc.max_receive_message_length", max_receive_bytes)],
        )
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(
            _TraceService(self._store), self._server
        )
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(
            _MetricsService(self._store), self._server
        )
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._server.stop(grace=None).wait(5)


class HttpOtlpReceiver(OtlpReceiver):
    """OTLP/HTTP: ``POST /v1/traces`` and ``/v1/metrics`` with protobuf bodies (gzip or not).

    With ``max_request_bytes``, a body larger than that once decompressed is refused with HTTP
    413 and counted in ``rejected`` (a collector's ``max_request_body_size``).
    """

    protocol = "http/protobuf"

    def __init__(self, max_request_bytes: int | None = None) -> None:
        super().__init__()
        store = self._store
        self.max_request_bytes = max_request_bytes
        self.rejected = 0
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                limit = receiver.max_request_bytes
                if limit is not None and len(body) > limit:
                    with store.lock:
                        receiver.rejected += 1
                    self.send_error(413, "request body too large")
                    return
                message: Message
                if self.path == "/v1/traces":
                    message = ExportTraceServiceRequest()
                    response: Message = trace_service_pb2.ExportTraceServiceResponse()
                elif self.path == "/v1/metrics":
                    message = ExportMetricsServiceRequest()
                    response = metrics_service_pb2.ExportMetricsServiceResponse()
                else:
                    self.send_error(404)
                    return
                try:
                    message.ParseFromString(body)
                except Exception:
                    self.send_error(400, "undecodable protobuf body")
                    return
                store.add(message, body, {k.lower(): v for k, v in self.headers.items()})
                payload = response.SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(POLL_S,), daemon=True
        )
        self._thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


# --- a collector that is down, or stuck ----------------------------------------------------------


def refused_endpoint() -> str:
    """``http://127.0.0.1:<port>`` where nothing listens: every connection is refused.

    The port is taken from the kernel and released; nothing else in the test binds loopback
    ports by number, so it stays free for the test's lifetime.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# The shutdown budget of a test's cleanup when no collector answers and the test reads nothing
# from the shutdown: the refused export's retry back-off would use up any budget, all of it
# waiting (what the test checks was decided when the telemetry was configured).
CLEANUP_MS: Final = 10


class HangingServer:
    """Accepts TCP connections and never answers: a collector stuck mid-request."""

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self._socket.settimeout(0.2)
        self.port = int(self._socket.getsockname()[1])
        self._connections: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def connections(self) -> int:
        return len(self._connections)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except (TimeoutError, OSError):
                continue
            self._connections.append(connection)  # held open, never read, never answered

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        for connection in self._connections:
            connection.close()
        self._socket.close()

    def __enter__(self) -> HangingServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
