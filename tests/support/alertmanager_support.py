"""A real Alertmanager for tests, and the webhook receiver its notifications go to.

    with WebhookReceiver() as hook, AlertmanagerServer(tmp_path, config) as am:
        prometheus alerting -> am.target
        hook.notifications()        # every JSON body Alertmanager POSTed, in arrival order

``AlertmanagerServer`` runs Debian's ``prometheus-alertmanager`` on 127.0.0.1 (web port free,
clustering off, its own storage directory). ``config_for_test`` turns a shipped Alertmanager
configuration into one for a test: same route tree, grouping, matchers and inhibitions, every
receiver a webhook of the test, timers divided like the rules' windows.
"""

from __future__ import annotations

import copy
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from tests.support.fleet_support import DASHBOARDS, scale_duration
from tests.support.prometheus_support import LoopbackDaemon, require_binary
from tests.support.wire_server import POLL_S

__all__ = ["AlertmanagerServer", "WebhookReceiver", "config_for_test"]

BINARY = "prometheus-alertmanager"
_ROUTE_TIMERS = ("group_wait", "group_interval", "repeat_interval")
# Alertmanager's defaults, for a route tree that does not set its root's timers.
_DEFAULT_TIMERS = {"group_wait": "30s", "group_interval": "5m", "repeat_interval": "4h"}
# A receiver's notifier settings; replaced by the test's webhook.
_NOTIFIERS = (
    "email_configs",
    "opsgenie_configs",
    "pagerduty_configs",
    "pushover_configs",
    "slack_configs",
    "sns_configs",
    "telegram_configs",
    "victorops_configs",
    "webex_configs",
    "webhook_configs",
    "wechat_configs",
    "discord_configs",
)


class WebhookReceiver:
    """An HTTP server on 127.0.0.1 recording every notification POSTed to it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._received: list[dict[str, Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                body["_path"] = self.path
                body["_received_at"] = time.time()
                with receiver._lock:
                    receiver._received.append(body)
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep the test output clean

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(POLL_S,), daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def notifications(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._received)

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _routes(route: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield route
    for child in route.get("routes", []) or []:
        yield from _routes(child)


def config_for_test(
    shipped: dict[str, Any], webhook_url: str, *, factor: float, floor_s: float = 2.0
) -> dict[str, Any]:
    """``shipped`` with every receiver posting to ``webhook_url/<receiver name>`` and the route
    timers divided by ``factor`` (at least ``floor_s``). Templates (files next to the shipped
    config) and global notifier settings (SMTP hosts, API URLs) are dropped: no receiver uses
    them any more; so are time intervals, which would make the test depend on the clock."""
    config = copy.deepcopy(shipped)
    config.pop("templates", None)
    shipped_global = config.get("global") or {}
    config["global"] = {k: v for k, v in shipped_global.items() if k == "resolve_timeout"}
    for receiver in config.get("receivers", []):
        for key in _NOTIFIERS:
            receiver.pop(key, None)
        receiver["webhook_configs"] = [
            {"url": f"{webhook_url}/{receiver['name']}", "send_resolved": True}
        ]
    root = config["route"]
    for key, default in _DEFAULT_TIMERS.items():
        root.setdefault(key, default)
    config.pop("time_intervals", None)
    config.pop("mute_time_intervals", None)
    for route in _routes(root):
        route.pop("mute_time_intervals", None)
        route.pop("active_time_intervals", None)
        for key in _ROUTE_TIMERS:
            if key in route:
                route[key] = scale_duration(str(route[key]), factor, floor_s)
    return config


class AlertmanagerServer(LoopbackDaemon):
    """Runs ``prometheus-alertmanager`` on a free 127.0.0.1 port with ``config``."""

    name = "alertmanager"
    config_file = "alertmanager.yml"

    def __init__(self, workdir: Path, config: dict[str, Any]) -> None:
        super().__init__(workdir)
        self.config = config

    def config_text(self) -> str:
        return yaml.safe_dump(self.config, sort_keys=False)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self, port: int) -> list[str]:
        return [
            require_binary(BINARY, package="prometheus-alertmanager"),
            f"--config.file={self.config_path}",
            f"--storage.path={self.workdir / f'data-{port}'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
            "--log.level=warn",
        ]

    def alerts(self) -> list[dict[str, Any]]:
        """Alerts Alertmanager holds (API v2): ``labels``, ``annotations``, ``status``."""
        with urllib.request.urlopen(f"{self.url}/api/v2/alerts", timeout=10) as response:
            return list(json.loads(response.read()))


def shipped_alertmanager_config() -> dict[str, Any]:
    """The example Alertmanager configuration shipped in dashboards/alertmanager/."""
    loaded: dict[str, Any] = yaml.safe_load(
        (DASHBOARDS / "alertmanager/alertmanager.yml").read_text()
    )
    return loaded


@contextmanager
def paging_alertmanager(
    workdir: Path, *, factor: float
) -> Iterator[tuple[WebhookReceiver, AlertmanagerServer]]:
    """Alertmanager on the shipped configuration made a test's (``config_for_test``), and the
    webhook receiver its notifications reach."""
    with WebhookReceiver() as hook:
        config = config_for_test(shipped_alertmanager_config(), hook.url, factor=factor)
        with AlertmanagerServer(workdir, config) as alertmanager:
            yield hook, alertmanager
