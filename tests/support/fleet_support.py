"""Agent processes for live tests, and the shipped rules with their time windows shortened.

    with DemoProcess(tmp_path / "a", tenants="acme,globex", noisy="globex=silent_bail",
                     duration_s=120, rate=15, noisy_for_s=60) as demo:
        demo.target            # "127.0.0.1:PORT", its /metrics endpoint

    shortened_rules(RULES.read_text(), factor=30)   # every window and `for:` divided by 30

Each ``DemoProcess`` is ``symfonic-otel demo --prometheus-port 0``: the demo picks a free port
itself and announces it on stderr, so two processes can never race for one.
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

REPO: Final = Path(__file__).resolve().parents[2]
DASHBOARDS: Final = REPO / "dashboards"
RULES: Final = DASHBOARDS / "prometheus" / "symfonic-rules.yml"

PAGE_SEVERITIES: Final = frozenset({"critical", "page"})
SILENT_BAIL_METRIC: Final = "symfonic_react_silent_bails_total"

_SERVING = re.compile(r"Serving Prometheus metrics on http://127\.0\.0\.1:(\d+)/metrics")
_UNITS: Final = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
_DURATION = re.compile(r"(?:\d+(?:ms|s|m|h|d|w|y))+")
_PART = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")


class DemoProcess:
    """``symfonic-otel demo --duration`` serving /metrics on a free loopback port."""

    def __init__(
        self,
        workdir: Path,
        *,
        duration_s: float,
        rate: float,
        tenants: str | None = None,
        noisy: str | None = None,
        noisy_for_s: float | None = None,
        seed: int = 7,
        faults: bool = False,
    ) -> None:
        self.workdir = Path(workdir)
        self.command = [
            sys.executable,
            "-m",
            "symfonic_otel",
            "demo",
            "--prometheus-port",
            "0",
            "--duration",
            f"{duration_s:g}",
            "--rate",
            f"{rate:g}",
            "--seed",
            str(seed),
        ]
        if tenants is not None:
            self.command += ["--tenants", tenants]
        if noisy is not None:
            self.command += ["--noisy", noisy]
        if noisy_for_s is not None:
            self.command += ["--noisy-for", f"{noisy_for_s:g}"]
        if faults:
            self.command.append("--faults")
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr_path = self.workdir / "demo.stderr"

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 60.0) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self._stderr_path.open("wb") as stderr:
            self._process = subprocess.Popen(
                self.command, stdout=subprocess.DEVNULL, stderr=stderr, cwd=self.workdir
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            match = _SERVING.search(self.stderr())
            if match:
                self.port = int(match.group(1))
                if self._metrics_served():
                    return
            if self._process.poll() is not None:
                raise RuntimeError(f"the demo exited early:\n{self.stderr()[-2000:]}")
            time.sleep(0.2)
        raise RuntimeError(f"the demo served no /metrics after {timeout_s}s:\n{self.stderr()}")

    def _metrics_served(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://{self.target}/metrics", timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stderr(self) -> str:
        try:
            return self._stderr_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGINT (the demo flushes and exits), then SIGKILL if it does not within 30 s."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def __enter__(self) -> DemoProcess:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@contextlib.contextmanager
def demo_fleet(
    workdir: Path,
    specs: Sequence[tuple[str, str]],
    *,
    duration_s: float,
    rate: float,
    seed: int,
    noisy_for_s: float | None = None,
) -> Iterator[list[DemoProcess]]:
    """One demo process per ``(tenants, noisy)`` spec, each with its own endpoint; all stopped."""
    processes: list[DemoProcess] = []
    try:
        for index, (tenants, noisy) in enumerate(specs):
            process = DemoProcess(
                workdir / f"demo-{index}",
                duration_s=duration_s,
                rate=rate,
                tenants=tenants,
                noisy=noisy,
                noisy_for_s=noisy_for_s,
                seed=seed + index,
            )
            processes.append(process)
            process.start()
        yield processes
    finally:
        for process in processes:
            process.stop()


# --- the rules, on a test's time scale -----------------------------------------------------------


def duration_seconds(text: str) -> float:
    """A Prometheus duration (``90s``, ``1h30m``) in seconds."""
    if not _DURATION.fullmatch(text):
        raise ValueError(f"not a Prometheus duration: {text!r}")
    return sum(int(n) * _UNITS[unit] for n, unit in _PART.findall(text))


def format_duration(seconds: float) -> str:
    return f"{max(round(seconds), 1)}s"


def scale_duration(text: str, factor: float, floor_s: float) -> str:
    return format_duration(max(duration_seconds(text) / factor, floor_s))


def shortened_rules(
    text: str, *, factor: float, window_floor_s: float = 10.0, for_floor_s: float = 1.0
) -> str:
    """The rule file with every range window, subquery step, offset and ``for:`` divided by
    ``factor`` (windows at least ``window_floor_s``: several scrapes of 1 s).

    Proportions between windows stay as shipped (a burn-rate alert's short window stays shorter
    than its long one), so a test runs the shipped logic, only faster.
    """

    def window(match: re.Match[str]) -> str:
        parts = match.group(1).split(":")
        scaled = [scale_duration(part, factor, window_floor_s) if part else "" for part in parts]
        return "[" + ":".join(scaled) + "]"

    text = re.sub(rf"\[({_DURATION.pattern}(?::(?:{_DURATION.pattern})?)?)\]", window, text)
    text = re.sub(
        rf"\boffset\s+({_DURATION.pattern})",
        lambda m: "offset " + scale_duration(m.group(1), factor, window_floor_s),
        text,
    )
    return re.sub(
        rf"(?m)^(\s+(?:keep_firing_)?for:\s*)({_DURATION.pattern})\s*$",
        lambda m: m.group(1) + scale_duration(m.group(2), factor, for_floor_s),
        text,
    )


def silent_bail_pages(rules: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Alerting rules that page on silent bails: severity critical / page, and an expression
    reading the silent-bail counter, directly or through recording rules."""
    recorded = {
        rule["record"]: rule["expr"]
        for group in rules["groups"]
        for rule in group["rules"]
        if "record" in rule
    }

    def reads_bails(expr: str, depth: int = 0) -> bool:
        if SILENT_BAIL_METRIC in expr:
            return True
        return depth < 10 and any(
            re.search(rf"(?<![\w:]){re.escape(name)}(?![\w:])", expr)
            and reads_bails(inner, depth + 1)
            for name, inner in recorded.items()
        )

    return {
        rule["alert"]: rule
        for group in rules["groups"]
        for rule in group["rules"]
        if "alert" in rule
        and rule.get("labels", {}).get("severity") in PAGE_SEVERITIES
        and reads_bails(rule["expr"])
    }
