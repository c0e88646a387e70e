"""A loopback HTTP endpoint speaking the Anthropic Messages wire format, scripted (no network).

The Claude Agent SDK's bundled CLI calls it through ``ANTHROPIC_BASE_URL`` with a placeholder key.
``ScriptedAnthropic`` answers ``POST /v1/messages`` (streamed as server-sent events when the
request asks, as the CLI does): it calls ``tool`` until ``tool_turns`` tool results are in the
conversation, then answers ``answer``; ``status`` makes every call fail with that HTTP status.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.wire_server import POLL_S

FOREVER = 10**6
TOOL = "mcp__weather__lookup"


@dataclass
class ScriptedAnthropic:
    tool_turns: int = FOREVER
    answer: str = "It is sunny."
    tool: str = TOOL
    status: int | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self, home: Path) -> dict[str, str]:
        """The CLI's environment: this endpoint, a placeholder key, no other traffic."""
        return {
            "ANTHROPIC_BASE_URL": self.base_url,
            "ANTHROPIC_API_KEY": "placeholder-not-a-key",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CONFIG_DIR": str(home),
        }

    def reply(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        done = sum(
            1
            for message in body.get("messages") or []
            for block in (message.get("content") if isinstance(message, dict) else None) or []
            if isinstance(block, dict) and block.get("type") == "tool_result"
        )
        if done < self.tool_turns:
            block = {
                "type": "tool_use",
                "id": f"toolu_{len(self.requests):04d}",
                "name": self.tool,
                "input": {"q": "weather"},
            }
            return [block], "tool_use"
        return [{"type": "text", "text": self.answer}], "end_turn"


def _events(body: dict[str, Any], blocks: list[dict[str, Any]], stop: str, n: int) -> bytes:
    usage = {"input_tokens": 10, "output_tokens": 1}
    start = {
        "id": f"msg_{n:04d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "scripted"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"message": start})]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"index": index, "content_block": opening}),
            ("content_block_delta", {"index": index, "delta": delta}),
            ("content_block_stop", {"index": index}),
        ]
    events += [
        (
            "message_delta",
            {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}},
        ),
        ("message_stop", {}),
    ]
    return "".join(
        f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n" for name, data in events
    ).encode()


def _handler(script: ScriptedAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def _send(self, status: int, kind: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                self._send(200, "application/json", json.dumps({"input_tokens": 10}).encode())
                return
            script.requests.append(body)
            if script.status is not None:
                error = {"type": "error", "error": {"type": "api_error", "message": "scripted"}}
                self._send(script.status, "application/json", json.dumps(error).encode())
                return
            blocks, stop = script.reply(body)
            n = len(script.requests)
            if body.get("stream"):
                self._send(200, "text/event-stream", _events(body, blocks, stop, n))
                return
            message = {
                "id": f"msg_{n:04d}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "scripted"),
                "content": blocks,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
            self._send(200, "application/json", json.dumps(message).encode())

    return Handler


@contextmanager
def serving(script: ScriptedAnthropic) -> Iterator[ScriptedAnthropic]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    script.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(POLL_S,), daemon=True)
    thread.start()
    try:
        yield script
    finally:
        server.shutdown()
        server.server_close()
