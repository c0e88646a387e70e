"""VictoriaMetrics for tests: the single-node server, vmagent and vmalert, on free loopback ports.

    with VictoriaMetricsServer(tmp_path / "vm") as vm,
         VmagentServer(tmp_path / "vmagent", scrape_config, vm.write_url) as agent,
         VmalertServer(tmp_path / "vmalert", [rules], vm.url, alertmanager.url) as vmalert:
        vm.query("sum(rate(symfonic_agent_runs_total[30s]))")    # Prometheus's query API
        vmalert.alerts()                                          # vmalert's active alerts

Debian's ``victoria-metrics`` package ships all three binaries; ``require_binary`` makes a
missing one a failure under ``CI`` and a skip otherwise, as for Prometheus.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.support.prometheus_support import (
    LoopbackDaemon,
    PrometheusError,
    PrometheusServer,
    require_binary,
)

__all__ = ["VictoriaMetricsServer", "VmagentServer", "VmalertServer", "read_env", "vm_binary"]

PACKAGE = "victoria-metrics"


def vm_binary(name: str) -> str:
    return require_binary(name, package=PACKAGE)


def _get(url: str) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise PrometheusError(f"{url}: HTTP {exc.code}: {exc.read()[:500]!r}") from exc


def read_env(path: Path) -> dict[str, str]:
    """``NAME=value`` lines of an environment file (``#`` comments and blank lines skipped)."""
    found: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            found[name] = value
    return found


class VictoriaMetricsServer(LoopbackDaemon):
    """``victoria-metrics`` (single node): storage, remote-write receiver, Prometheus query API."""

    name = "victoria-metrics"
    wait_for = staticmethod(PrometheusServer.wait_for)

    def __init__(self, workdir: Path, *, extra_args: Sequence[str] = ()) -> None:
        super().__init__(workdir)
        self.extra_args = list(extra_args)

    @property
    def write_url(self) -> str:
        return f"{self.url}/api/v1/write"

    def command(self, port: int) -> list[str]:
        return [
            vm_binary("victoria-metrics"),
            f"-httpListenAddr=127.0.0.1:{port}",
            f"-storageDataPath={self.workdir / f'data-{port}'}",
            "-retentionPeriod=1d",
            "-loggerLevel=WARN",
            *self.extra_args,
        ]

    def query(self, promql: str) -> list[Any]:
        """An instant query now; the result list."""
        params = urllib.parse.urlencode({"query": promql, "nocache": "1"})
        body = _get(f"{self.url}/api/v1/query?{params}")
        if body.get("status") != "success":
            raise PrometheusError(f"query {promql!r}: {body}")
        result: list[Any] = body["data"]["result"]
        return result


class VmagentServer(LoopbackDaemon):
    """``vmagent`` scraping with ``scrape_config`` (Prometheus format), writing to ``write_url``."""

    name = "vmagent"
    config_file = "vmagent.yml"

    def __init__(self, workdir: Path, scrape_config: Mapping[str, Any], write_url: str) -> None:
        super().__init__(workdir)
        self.scrape_config = dict(scrape_config)
        self.write_url = write_url

    def config_text(self) -> str:
        return yaml.safe_dump(self.scrape_config, sort_keys=False)

    def command(self, port: int) -> list[str]:
        return [
            vm_binary("vmagent"),
            f"-httpListenAddr=127.0.0.1:{port}",
            f"-promscrape.config={self.config_path}",
            f"-remoteWrite.url={self.write_url}",
            f"-remoteWrite.tmpDataPath={self.workdir / f'queue-{port}'}",
            "-remoteWrite.flushInterval=1s",
            "-loggerLevel=WARN",
        ]

    def targets(self) -> list[dict[str, Any]]:
        body = _get(f"{self.url}/api/v1/targets")
        found: list[dict[str, Any]] = body["data"]["activeTargets"]
        return found


class VmalertServer(LoopbackDaemon):
    """``vmalert`` evaluating ``rule_files`` on a VictoriaMetrics, notifying an Alertmanager.

    ``environment`` is the exported ``vmalert.env`` read as variables (``read_env``), which
    vmalert reads with ``-envflag.enable``; ``flags`` are command-line flags by name
    (``{"evaluationInterval": "1s"}``), which win over them, and so do the URLs given here.
    """

    name = "vmalert"

    def __init__(
        self,
        workdir: Path,
        rule_files: Sequence[Path],
        vm_url: str,
        alertmanager_url: str,
        *,
        environment: Mapping[str, str] | None = None,
        flags: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(workdir)
        self.rule_files = [Path(path).resolve() for path in rule_files]
        self.environment = dict(environment or {})
        self.flags = dict(flags or {})
        self.flags.update(
            {
                "datasource.url": vm_url,
                "remoteWrite.url": vm_url,
                "remoteRead.url": vm_url,
                "notifier.url": alertmanager_url,
            }
        )

    def command(self, port: int) -> list[str]:
        flags = {**self.flags, "httpListenAddr": f"127.0.0.1:{port}", "loggerLevel": "WARN"}
        return [
            "env",  # the variables for this process only (env execs vmalert: one process)
            *(f"{name}={value}" for name, value in self.environment.items()),
            vm_binary("vmalert"),
            "-envflag.enable",
            *(f"-rule={path}" for path in self.rule_files),
            *(f"-{name}={value}" for name, value in flags.items()),
        ]

    def alerts(self) -> list[dict[str, Any]]:
        body = _get(f"{self.url}/api/v1/alerts")
        found: list[dict[str, Any]] = body["data"]["alerts"]
        return found

    def rules(self) -> list[dict[str, Any]]:
        body = _get(f"{self.url}/api/v1/rules")
        groups: list[dict[str, Any]] = body["data"]["groups"]
        return groups
