"""A loopback HTTP server that plays provider wire responses to the real LangChain adapters.

The adapters under test (``langchain-openai``, ``langchain-anthropic``, ``langchain-google-genai``,
``langchain-ollama``) keep their own HTTP clients, request building and response parsing; only
the network end is ours: each request gets the next scripted response body, byte for byte, and is
recorded (path and JSON body) for the test to read.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

# serve_forever's poll: a server's shutdown() waits for the next one (0.5 s by default, paid by
# every test that closes a server).
POLL_S: Final = 0.02

__all__ = ["WireResponse", "WireServer", "serve"]


@dataclass(frozen=True)
class WireResponse:
    """One HTTP response: a JSON value (serialised here) or raw bytes (SSE, NDJSON)."""

    body: Any
    status: int = 200
    content_type: str = "application/json"

    def encoded(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body).encode()


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    body: Any


class WireServer:
    """Serves ``responses`` in order, one per request; a request past the end gets HTTP 500."""

    def __init__(self, responses: Sequence[WireResponse]) -> None:
        self._responses = list(responses)
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                with server._lock:
                    server.requests.append(RecordedRequest(self.command, self.path, body))
                    index = len(server.requests) - 1
                    response = server._responses[index] if index < len(server._responses) else None
                if response is None:
                    payload = b'{"error": {"message": "script exhausted"}}'
                    status, content_type = 500, "application/json"
                else:
                    payload = response.encoded()
                    status, content_type = response.status, response.content_type
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_POST = _serve
            do_GET = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(POLL_S,), daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@contextmanager
def serve(*responses: WireResponse) -> Iterator[WireServer]:
    server = WireServer(responses)
    server.start()
    try:
        yield server
    finally:
        server.close()
