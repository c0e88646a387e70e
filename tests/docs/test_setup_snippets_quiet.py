"""The framework pages' setup snippets, run exactly as written (nothing in the environment but
where the collector is): quiet with a collector, and never a traceback without one.

A snippet calls a bare ``configure_telemetry()``: OTLP to ``OTEL_EXPORTER_OTLP_ENDPOINT``
(default ``localhost:4317``), as every OpenTelemetry SDK setup. With a collector it prints
nothing. With none the SDK's exporter says so at exit (its "Transient error ... retrying" and
"Failed to export" lines: the truthful signal that telemetry goes nowhere, as in any OTel
app); the pages say how to try a snippet with no collector quietly. What it never prints is a
traceback: the shutdown past its deadline aborts the exporter's retries and leaves the channel
to the SDK (see ``tests/export/test_shutdown_past_the_deadline.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.otlp_receiver import GrpcOtlpReceiver
from tests.support.processes import run_text
from tests.support.reliability_support import refused_endpoint

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
SETUPS = [
    "openai_agents_setup.py",
    "pydantic_ai_setup.py",
    "llama_index_setup.py",
    "smolagents_setup.py",
]
# Placeholders the snippets' model clients need to be built (never called).
MODEL_ENV = {"OPENAI_API_KEY": "placeholder-not-a-key", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}


def _run(example: str, endpoint: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(PYTHONPATH=str(ROOT), OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, **MODEL_ENV)
    started = time.monotonic()
    done = run_text(
        [sys.executable, str(EXAMPLES / example)],
        env=env,
        cwd=ROOT,
    )
    return done, time.monotonic() - started


@pytest.mark.parametrize("example", SETUPS)
def test_the_setup_snippet_as_written_is_quiet_with_a_collector(example: str) -> None:
    with GrpcOtlpReceiver() as collector:
        done, _ = _run(example, collector.endpoint)
        assert done.returncode == 0, done.stderr
        assert done.stdout == ""
        assert done.stderr == ""
        assert collector.metric_requests()  # it did export there, at exit


@pytest.mark.parametrize("example", SETUPS)
def test_the_setup_snippet_without_a_collector_prints_no_traceback(example: str) -> None:
    done, _ = _run(example, refused_endpoint())
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert "Exception while exporting" not in done.stderr
    assert "Channel closed" not in done.stderr
