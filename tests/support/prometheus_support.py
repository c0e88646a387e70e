"""A real Prometheus server for tests, on a free loopback port, with a throwaway TSDB.

    with PrometheusServer(tmp_path, scrape_targets=["127.0.0.1:9464"], rule_files=[rules]) as prom:
        prom.wait_for(lambda: prom.query("up == 1"), timeout_s=10)
        prom.query('sum(rate(symfonic_agent_runs_total[30s]))')   # -> list of results
        prom.alerts()                                                # -> list of active alerts

It can also send its alerts to Alertmanagers (``alertmanagers=``), receive remote writes
(``extra_args=["--web.enable-remote-write-receiver"]``), or run in agent mode
(``agent_mode=True``: scrape and remote-write only, no rules, no queries).

Only the standard library talks to it (``urllib``). ``require_binary`` makes a missing
``prometheus`` / ``promtool`` a failure when the ``CI`` environment variable is set and a skip
otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self, TypeVar

import pytest

__all__ = [
    "PrometheusError",
    "PrometheusServer",
    "free_port",
    "require_binary",
]

T = TypeVar("T")


class PrometheusError(RuntimeError):
    """Prometheus did not start, or answered a request with an error."""


def require_binary(name: str, package: str = "prometheus") -> str:
    """Path of the executable ``name``; fail in CI (env ``CI`` set) or skip when it is missing."""
    path = shutil.which(name)
    if path is not None:
        return path
    message = f"`{name}` is not on PATH (Debian/Ubuntu: apt-get install {package})"
    if os.environ.get("CI"):
        pytest.fail(f"{message}; CI must run this test", pytrace=False)
    pytest.skip(message)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LoopbackDaemon:
    """A server binary run on a free 127.0.0.1 port, logging to its work directory.

    Subclasses give its name and its command line for a port; the rest (port retries, readiness,
    stopping, the log tail for failure messages) is the same for Prometheus and Alertmanager.
    """

    name = "daemon"
    config_file = ""  # the configuration file in the work directory, for daemons that take one

    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path = self.workdir / f"{self.name}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def config_path(self) -> Path:
        return self.workdir / self.config_file

    def config_text(self) -> str:
        """The text of ``config_file``."""
        raise NotImplementedError

    def command(self, port: int) -> list[str]:
        raise NotImplementedError

    def _launch(self, timeout_s: float) -> None:
        last_error = ""
        for _attempt in range(3):  # the free port can be taken between probe and bind
            self.port = free_port()
            argv = self.command(self.port)
            with self._log_path.open("ab") as log:
                self._process = subprocess.Popen(
                    argv, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir
                )
            try:
                self._wait_ready(timeout_s)
                return
            except PrometheusError as exc:
                last_error = str(exc)
                self.stop()
                if "address already in use" not in last_error:
                    break
        raise PrometheusError(last_error)

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        process = self._process
        assert process is not None
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise PrometheusError(
                    f"{self.name} exited with code {process.returncode}:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)
        raise PrometheusError(f"{self.name} not ready after {timeout_s}s:\n{self.log_tail()}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self._log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self, timeout_s: float = 30.0) -> None:
        """Writes the configuration file, if the daemon takes one, then launches it."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.config_file:
            self.config_path.write_text(self.config_text())
        self._launch(timeout_s)


class PrometheusServer(LoopbackDaemon):
    """Runs the ``prometheus`` binary on 127.0.0.1 with a generated configuration."""

    name = "prometheus"
    config_file = "prometheus.yml"

    def __init__(
        self,
        workdir: Path,
        *,
        scrape_targets: Sequence[str],
        rule_files: Sequence[Path] = (),
        scrape_interval: str = "1s",
        evaluation_interval: str = "1s",
        job_name: str = "symfonic",
        binary: str | None = None,
        alertmanagers: Sequence[str] = (),
        remote_write: Sequence[dict[str, Any]] = (),
        agent_mode: bool = False,
        config: dict[str, Any] | None = None,
        extra_args: Sequence[str] = (),
    ) -> None:
        super().__init__(workdir)
        self.scrape_targets = list(scrape_targets)
        self.rule_files = [Path(path).resolve() for path in rule_files]
        self.scrape_interval = scrape_interval
        self.evaluation_interval = evaluation_interval
        self.job_name = job_name
        self.binary = binary
        self.alertmanagers = list(alertmanagers)
        self.remote_write = list(remote_write)
        self.agent_mode = agent_mode
        self.config = config  # a whole configuration, instead of the generated one
        self.extra_args = list(extra_args)

    # --- lifecycle -----------------------------------------------------------------------------

    def write_config(self) -> Path:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.config is not None:
            self.config_path.write_text(json.dumps(self.config, indent=2))
            return self.config_path
        config: dict[str, Any] = {
            "global": {
                "scrape_interval": self.scrape_interval,
                "scrape_timeout": self.scrape_interval,
                "evaluation_interval": self.evaluation_interval,
            },
            "rule_files": [str(path) for path in self.rule_files],
            "scrape_configs": [
                {
                    "job_name": self.job_name,
                    "static_configs": [{"targets": self.scrape_targets}],
                }
            ]
            if self.scrape_targets
            else [],
        }
        if self.agent_mode:
            del config["rule_files"], config["global"]["evaluation_interval"]
        if self.alertmanagers:
            config["alerting"] = {
                "alertmanagers": [{"static_configs": [{"targets": self.alertmanagers}]}]
            }
        if self.remote_write:
            config["remote_write"] = self.remote_write
        # JSON is valid YAML: no YAML library needed.
        self.config_path.write_text(json.dumps(config, indent=2))
        return self.config_path

    def start(self, timeout_s: float = 30.0) -> None:
        self.write_config()
        self._launch(timeout_s)

    def command(self, port: int) -> list[str]:
        binary = self.binary or require_binary("prometheus")
        storage = self.workdir / f"tsdb-{port}"
        if self.agent_mode:  # agent mode refuses the TSDB flags
            storage_args = ["--enable-feature=agent", f"--storage.agent.path={storage}"]
        else:
            storage_args = [f"--storage.tsdb.path={storage}", "--storage.tsdb.retention.time=1h"]
        return [
            binary,
            f"--config.file={self.config_path}",
            *storage_args,
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
            *self.extra_args,
        ]

    # --- HTTP API ------------------------------------------------------------------------------

    def api(self, path: str, params: Sequence[tuple[str, str]] = ()) -> Any:
        """GET ``/api/v1/<path>`` and return its ``data``; raise PrometheusError on an error."""
        query = urllib.parse.urlencode(list(params))
        url = f"{self.url}/api/v1/{path}" + (f"?{query}" if query else "")
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            raise PrometheusError(f"GET {url}: HTTP {exc.code}: {detail}") from exc
        if body.get("status") != "success":
            raise PrometheusError(f"GET {url}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, promql: str, at: float | None = None) -> list[Any]:
        """Instant query; the result list (one entry for a scalar or string result)."""
        params = [("query", promql)]
        if at is not None:
            params.append(("time", f"{at:.3f}"))
        data = self.api("query", params)
        result = data["result"]
        if data["resultType"] in ("scalar", "string"):
            return [result]
        return list(result)

    def query_range(self, promql: str, start: float, end: float, step: str = "1s") -> list[Any]:
        data = self.api(
            "query_range",
            [("query", promql), ("start", f"{start:.3f}"), ("end", f"{end:.3f}"), ("step", step)],
        )
        return list(data["result"])

    def label_values(self, label: str, match: str | None = None) -> list[str]:
        params = [("match[]", match)] if match else []
        return list(self.api(f"label/{urllib.parse.quote(label)}/values", params))

    def alerts(self) -> list[dict[str, Any]]:
        """Active (pending or firing) alerts: each has ``labels``, ``annotations``, ``state``."""
        return list(self.api("alerts")["alerts"])

    def rules(self) -> list[dict[str, Any]]:
        return list(self.api("rules")["groups"])

    def targets(self) -> list[dict[str, Any]]:
        return list(self.api("targets")["activeTargets"])

    @staticmethod
    def wait_for(
        condition: Callable[[], T], *, timeout_s: float, interval_s: float = 0.5
    ) -> T | None:
        """Poll ``condition`` until it returns something truthy; that value, or None on timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() >= deadline:
                return None
            time.sleep(interval_s)
