"""Ctrl-C during ``symfonic-otel demo``: telemetry flushed, partial summary printed, exit 130.

The demo runs as a real subprocess and gets a real SIGINT. It exports over OTLP to the test
receiver with batching and the metric interval set far beyond the test's length, so whatever
reaches the receiver was sent by the flush on the way out, not by a timer.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import IO

import pytest

from symfonic_otel import semconv
from symfonic_otel.cli import EXIT_TERMINATED
from symfonic_otel.demo.runner import EXIT_INTERRUPTED
from symfonic_otel.demo.traffic import AGENT_NAME
from tests.support.otlp_receiver import HangingServer, HttpOtlpReceiver, points_of, refused_endpoint

SERVING = re.compile(r"Serving Prometheus metrics on (http://127\.0\.0\.1:\d+/metrics)")
RUNS_SERIES = re.compile(r"^symfonic_agent_runs_total\{[^}]*\} ([0-9.e+]+)$", re.MULTILINE)
ALL_ROW = re.compile(r"│ all\s+│\s+(\d+) │")
PARTIAL = "Interrupted: partial summary of the runs so far."
NEVER_MS = "600000"  # no timer-driven export during the test: only the flush sends anything
STARTUP_TIMEOUT_S = 60.0


def _restore_default_sigint() -> None:
    # A child inherits an ignored SIGINT (CI runners often start jobs that way), and Python
    # then never turns SIGINT into KeyboardInterrupt. Ctrl-C in a terminal has the default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Demo:
    """``symfonic-otel demo`` in a subprocess, stderr read on a thread (progress, the port)."""

    def __init__(self, *args: str, env: dict[str, str]) -> None:
        script = shutil.which("symfonic-otel")
        command = [script] if script else [sys.executable, "-m", "symfonic_otel"]
        self.process = subprocess.Popen(
            [*command, "demo", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env=env,
            preexec_fn=_restore_default_sigint,
        )
        self.stderr_lines: list[str] = []
        self.stderr_times: list[float] = []
        self.metrics_url: str | None = None
        self._serving = threading.Event()
        assert self.process.stderr is not None
        self._reader = threading.Thread(target=self._read, args=(self.process.stderr,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.stderr_times.append(time.monotonic())
            self.stderr_lines.append(line)
            match = SERVING.search(line)
            if match:
                self.metrics_url = match.group(1)
                self._serving.set()
        self._serving.set()

    def wait_serving(self) -> str:
        assert self._serving.wait(STARTUP_TIMEOUT_S), "the demo never started"
        assert self.metrics_url is not None, "".join(self.stderr_lines)
        return self.metrics_url

    def interrupt(self) -> tuple[int, str, str]:
        self.process.send_signal(signal.SIGINT)
        return self.finish()

    def finish(self) -> tuple[int, str, str]:
        assert self.process.stdout is not None
        out = self.process.stdout.read()
        code = self.process.wait(timeout=60)
        self.exited_at = time.monotonic()
        self._reader.join(10)
        return code, out, "".join(self.stderr_lines)

    def wait_for_line(self, text: str, timeout_s: float = STARTUP_TIMEOUT_S) -> float:
        """When the first stderr line containing ``text`` arrived."""
        deadline = time.monotonic() + timeout_s
        while True:
            for line, at in zip(list(self.stderr_lines), list(self.stderr_times), strict=False):
                if text in line:
                    return at
            if time.monotonic() >= deadline:
                break
            time.sleep(0.02)
        raise AssertionError(f"no {text!r} on stderr:\n{''.join(self.stderr_lines)}")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def demo_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture
def receiver() -> Iterator[HttpOtlpReceiver]:
    with HttpOtlpReceiver() as server:
        yield server


def _runs_counted(metrics_url: str) -> float:
    with urllib.request.urlopen(metrics_url, timeout=5) as response:
        text = response.read().decode()
    return sum(float(value) for value in RUNS_SERIES.findall(text))


def _traffic_flowing(demo: Demo, runs: float = 5) -> float:
    """Once the demo serves, the runs its endpoint counts, polled until ``runs`` (or the startup
    deadline: the caller decides whether fewer will do)."""
    metrics_url = demo.wait_serving()
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    counted = 0.0
    while counted < runs and time.monotonic() < deadline:
        time.sleep(0.2)
        counted = _runs_counted(metrics_url)
    return counted


def _interrupted_for_a_partial_summary(demo: Demo) -> tuple[str, str]:
    """Ctrl-C while runs are under way: status 130, no traceback, a summary marked partial.
    The demo's stdout and stderr, for what else the test reads in them."""
    code, out, err = demo.interrupt()
    assert code == EXIT_INTERRUPTED, err
    assert "Traceback" not in err
    assert PARTIAL in out
    return out, err


def _flush_only_demo(env: dict[str, str], receiver: HttpOtlpReceiver) -> Demo:
    """A timed demo over OTLP whose only export is the flush on the way out."""
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_BSP_SCHEDULE_DELAY=NEVER_MS,
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE="2048",
        OTEL_METRIC_EXPORT_INTERVAL=NEVER_MS,
    )
    return Demo("--duration", "30", "--otlp", "--prometheus-port", "0", env=env)


def test_ctrl_c_mid_traffic_flushes_prints_the_partial_summary_and_exits_130(
    demo_env: dict[str, str], receiver: HttpOtlpReceiver
) -> None:
    demo = _flush_only_demo(demo_env, receiver)
    try:
        counted = _traffic_flowing(demo)
        assert counted >= 5, "no runs were counted before the deadline"
        assert receiver.trace_requests() == [] and receiver.metric_requests() == []
        out, _ = _interrupted_for_a_partial_summary(demo)
    finally:
        demo.kill()

    rows = ALL_ROW.findall(out)
    assert rows, out
    summarised = int(rows[0])
    assert counted <= summarised < 30 * 20  # partial: fewer than --duration x --rate runs

    # Flushed on the way out: every run of the summary reached the collector, span and count.
    run_spans = [s for s in receiver.spans() if s.name == semconv.agent_span_name(AGENT_NAME)]
    assert len(run_spans) == summarised
    exported = max(
        sum(p.value or 0 for p in points_of([request]) if p.name == semconv.AGENT_RUNS.name)
        for request in receiver.metric_requests()
    )
    assert exported == summarised


def test_sigterm_mid_traffic_is_handled_like_ctrl_c_and_exits_143(
    demo_env: dict[str, str], receiver: HttpOtlpReceiver
) -> None:
    """docker stop / Kubernetes: a summary, the telemetry flushed, a prompt exit, status 143."""
    demo = _flush_only_demo(demo_env, receiver)
    try:
        _traffic_flowing(demo)
        demo.process.send_signal(signal.SIGTERM)
        sent_at = time.monotonic()
        code, out, err = demo.finish()
    finally:
        demo.kill()
    assert code == EXIT_TERMINATED, err
    assert demo.exited_at - sent_at < 15  # prompt: the interrupted flush budget, not --duration
    assert "Traceback" not in err
    assert PARTIAL in out
    # The progress bar counts finished runs only; the summary says why its count can be higher.
    assert "progress bar counted only the ones that finished" in " ".join(out.split())
    summarised = int(ALL_ROW.findall(out)[0])
    run_spans = [s for s in receiver.spans() if s.name == semconv.agent_span_name(AGENT_NAME)]
    assert len(run_spans) == summarised


def test_ctrl_c_during_warm_up_still_exits_130_with_a_summary(demo_env: dict[str, str]) -> None:
    demo = Demo("--duration", "30", "--prometheus-port", "0", env=demo_env)
    try:
        demo.wait_serving()  # printed just before the warm-up runs
        time.sleep(0.05)
        out, _ = _interrupted_for_a_partial_summary(demo)
    finally:
        demo.kill()
    assert "No run finished, so there is nothing to count yet." in out
    assert "No run's trace to show: none of the sample runs finished" in out


# --- the final flush: bounded, quiet, and Ctrl-C-able -------------------------------------------

SENDING = "Sending the telemetry over OTLP"
SDK_NOISE = ("Failed to export", "Transient error", "retrying", "Exception while exporting")


def _otlp_env(env: dict[str, str], endpoint: str, protocol: str) -> dict[str, str]:
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_EXPORTER_OTLP_PROTOCOL=protocol)
    return env


def test_ctrl_c_during_the_final_flush_keeps_the_summary_and_exits_130(
    demo_env: dict[str, str],
) -> None:
    """The moment users press Ctrl-C: the runs are done, the collector does not answer."""
    with HangingServer() as collector:
        demo = Demo("--otlp", "--runs", "20", env=_otlp_env(demo_env, collector.endpoint, "grpc"))
        try:
            demo.wait_for_line(SENDING)
            time.sleep(0.3)  # well inside the flush: it waits up to its budget on this collector
            assert demo.process.poll() is None, "the demo exited before the signal"
            signalled = time.monotonic()
            code, out, err = demo.interrupt()
        finally:
            demo.kill()
    assert code == EXIT_INTERRUPTED, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert demo.exited_at - signalled < 3.0
    assert PARTIAL not in out  # every run had ended: the summary printed before the flush is whole
    assert int(ALL_ROW.findall(out)[0]) >= 20
    assert "How to read these counts:" in out and "One run's trace (" in out
    assert "Interrupted while sending the telemetry: the summary above is complete" in " ".join(
        err.split()
    )


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_no_collector_costs_no_wait_and_one_line(demo_env: dict[str, str], protocol: str) -> None:
    endpoint = refused_endpoint()
    demo = Demo("--otlp", "--runs", "20", env=_otlp_env(demo_env, endpoint, protocol))
    try:
        code, out, err = demo.finish()
    finally:
        demo.kill()
    assert code == 0, err
    flush_started = demo.wait_for_line(SENDING, timeout_s=0)
    assert demo.exited_at - flush_started < 3.0  # the SDK's own retries: 10 s per signal
    for noise in SDK_NOISE:
        assert noise not in err
    line = " ".join(err.split())
    assert line.count("OTLP export failed (") == 1
    # The line names the endpoint it used (over HTTP, each signal's path under it).
    used = endpoint if protocol == "grpc" else f"{endpoint}/v1/traces and {endpoint}/v1/metrics"
    assert f"no collector accepted the telemetry at {used} (from the OTEL_EXPORTER_OTLP_" in line
    assert "Traceback" not in err
    assert "How to read these counts:" in out


def test_a_listening_collector_gets_every_run_and_no_warning(
    demo_env: dict[str, str], receiver: HttpOtlpReceiver
) -> None:
    demo = Demo(
        "--otlp", "--runs", "20", env=_otlp_env(demo_env, receiver.endpoint, "http/protobuf")
    )
    try:
        code, out, err = demo.finish()
    finally:
        demo.kill()
    assert code == 0, err
    assert "OTLP export failed" not in err and "did not confirm" not in err
    summarised = int(ALL_ROW.findall(out)[0])
    run_spans = [s for s in receiver.spans() if s.name == semconv.agent_span_name(AGENT_NAME)]
    assert len(run_spans) == summarised


# --- Ctrl-C at any --runs: runs are made as the demo goes, so stopping costs the same ----------

INTERRUPT_BOUND_S = 2.0  # the README's promise: Ctrl-C exits within 2 s


@pytest.mark.parametrize("runs", ["100000", "100000000"])
def test_ctrl_c_at_any_run_count_exits_within_the_bound_with_a_summary(
    demo_env: dict[str, str], runs: str
) -> None:
    """A real SIGINT once runs are flowing; with every run made up front none would flow."""
    demo = Demo("--runs", runs, "--prometheus-port", "0", env=demo_env)
    try:
        counted = _traffic_flowing(demo)
        assert counted >= 5, "no run finished: the demo is not making runs as it goes"
        sent = time.monotonic()
        out, err = _interrupted_for_a_partial_summary(demo)
    finally:
        demo.kill()
    assert demo.exited_at - sent < INTERRUPT_BOUND_S
    assert "Task exception was never retrieved" not in err, err
    rows = ALL_ROW.findall(out)
    assert rows and counted <= int(rows[0]) < int(runs), out
