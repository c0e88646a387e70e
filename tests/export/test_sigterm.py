"""SIGTERM to a real process: what the library's opt-in flushes, and what is lost without it.

The app (tests/support/sigterm_app.py) exports over OTLP to a real receiver with batching and the
metric interval far beyond the test, so whatever arrives was sent by the shutdown on SIGTERM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from symfonic_otel import configure_telemetry, semconv
from tests.support.otlp_receiver import HttpOtlpReceiver, points_of

ROOT = Path(__file__).resolve().parents[2]
APP = Path(__file__).resolve().parents[1] / "support" / "sigterm_app.py"
NEVER_MS = "600000"


def _run(receiver: HttpOtlpReceiver, *args: str) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        PYTHONPATH=str(ROOT),
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_BSP_SCHEDULE_DELAY=NEVER_MS,
        OTEL_METRIC_EXPORT_INTERVAL=NEVER_MS,
    )
    process = subprocess.Popen(
        [sys.executable, str(APP), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        assert process.stdout is not None and process.stdin is not None
        assert process.stdout.readline().strip() == "ready"
        process.send_signal(signal.SIGTERM)
        if "ignore" in args:  # still alive after the shutdown: end it through stdin
            assert receiver.wait_for(lambda r: bool(r.metric_requests()), timeout=30)
            time.sleep(0.2)
            assert process.poll() is None
            process.stdin.write("stop\n")
            process.stdin.flush()
        out, err = process.communicate(timeout=60)
        assert "Traceback" not in err, err
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    return process.returncode, out


def _runs_exported(receiver: HttpOtlpReceiver) -> float:
    points = points_of(receiver.metric_requests())
    return sum(p.value or 0 for p in points if p.name == semconv.AGENT_RUNS.name)


def _run_spans(receiver: HttpOtlpReceiver) -> int:
    return sum(1 for s in receiver.spans() if s.name == semconv.agent_span_name("app"))


@pytest.fixture
def receiver() -> Iterator[HttpOtlpReceiver]:
    with HttpOtlpReceiver() as server:
        yield server


def test_without_the_opt_in_sigterm_loses_everything_not_yet_exported(
    receiver: HttpOtlpReceiver,
) -> None:
    code, _ = _run(receiver)
    assert code == -signal.SIGTERM  # the default action: killed, no atexit hook ran
    assert receiver.trace_requests() == [] and receiver.metric_requests() == []


def test_the_opt_in_flushes_all_runs_then_ends_as_sigterm_would(
    receiver: HttpOtlpReceiver,
) -> None:
    code, _ = _run(receiver, "opt-in")
    assert code == -signal.SIGTERM  # the default action still ends the process (143 in a shell)
    assert _run_spans(receiver) == 11  # 10 finished + the open one, closed as abandoned
    assert _runs_exported(receiver) == 11


def test_the_opt_in_chains_to_the_apps_own_handler(receiver: HttpOtlpReceiver) -> None:
    code, out = _run(receiver, "chain", "opt-in")
    assert code == 3 and "own handler ran" in out  # the app's handler ran, after the flush
    assert _runs_exported(receiver) == 11


def test_an_ignored_sigterm_stays_ignored_after_the_flush(receiver: HttpOtlpReceiver) -> None:
    code, out = _run(receiver, "ignore", "opt-in")
    assert code == 0 and "stopped by stdin" in out
    assert _runs_exported(receiver) == 11


def test_the_opt_in_needs_the_main_thread() -> None:

    before = signal.getsignal(signal.SIGTERM)
    telemetry = configure_telemetry(service_name="t", otlp=False, set_global=False)
    failure: list[BaseException] = []

    def call() -> None:
        try:
            telemetry.shutdown_on_sigterm()
        except RuntimeError as exc:
            failure.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    thread.join()
    telemetry.shutdown()
    assert failure and "main thread" in str(failure[0])
    assert signal.getsignal(signal.SIGTERM) == before  # nothing installed
