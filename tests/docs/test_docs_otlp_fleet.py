"""The fleet example of the OTLP page runs and sends what it says: gzip, lowmemory, bounded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from symfonic_otel import semconv
from tests.support.otlp_receiver import HttpOtlpReceiver

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "examples" / "otlp_fleet.py"
PAGE = REPO / "docs" / "otlp-and-fleets.md"


def test_the_page_shows_the_example_as_it_runs() -> None:
    assert f"```python\n{EXAMPLE.read_text()}```" in PAGE.read_text()


def test_the_fleet_example_pushes_gzip_delta_tenant_counters_and_histograms() -> None:
    with HttpOtlpReceiver(max_request_bytes=4 * 1024 * 1024) as receiver:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env.update(
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]),
        )
        done = subprocess.run(
            [sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout == ""
        points = receiver.points()
        metric_headers = [
            h for h in receiver.headers() if h.get("content-type") == "application/x-protobuf"
        ]

    assert any(h.get("content-encoding") == "gzip" for h in metric_headers)
    runs = [p for p in points if p.name == semconv.AGENT_RUNS.name and p.value]
    assert runs and {(p.temporality, p.value) for p in runs} == {("DELTA", 1)}
    assert {p.attributes[semconv.TENANT_ID] for p in runs} == {"acme"}
    durations = [p for p in points if p.name == semconv.AGENT_DURATION.name]
    assert durations and {(p.temporality, p.count) for p in durations} == {("DELTA", 1)}
    assert done.stderr == ""  # nothing logged on the way
    assert receiver.rejected == 0
