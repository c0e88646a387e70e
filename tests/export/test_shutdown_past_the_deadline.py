"""A shutdown past its deadline prints no SDK traceback: the exporters' retries are aborted,
and their connections are never closed under an export in flight (the SDK, handed a closed
channel, printed "Channel closed!" or an "Exception while exporting metrics" traceback)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.support.processes import run_text
from tests.support.reliability_support import dead_collector

ROOT = Path(__file__).resolve().parents[2]
APP = """
import sys, time
from symfonic_otel import OTelCallbackHandler, configure_telemetry
telemetry = configure_telemetry(set_global=False, export_interval_ms=60_000)
handler = OTelCallbackHandler(
    tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
)
started = time.monotonic()
clean = telemetry.shutdown(timeout_millis=800)
print(f"{clean} {time.monotonic() - started:.2f}")
time.sleep(float(sys.argv[1]))  # the process lives on: what the SDK's threads print next
"""
NOISE = ("Traceback", "Exception while exporting", "Channel closed", "closed channel")


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
@pytest.mark.parametrize("collector", ["hanging", "refused"])
def test_a_shutdown_past_its_deadline_leaves_the_sdk_nothing_to_print_a_traceback_about(
    tmp_path: Path, collector: str, protocol: str
) -> None:
    app = tmp_path / "app.py"
    app.write_text(APP)
    with dead_collector(collector) as endpoint:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env.update(
            PYTHONPATH=str(ROOT),
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
            OTEL_EXPORTER_OTLP_TIMEOUT="3",  # the export in flight ends within the wait below
        )
        done = run_text(
            [sys.executable, str(app), "4"],
            env=env,
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    clean, elapsed = done.stdout.split()
    assert float(elapsed) < 0.8 + 1.0  # bounded: the deadline, and scheduling slack
    if collector == "hanging":
        assert clean == "False"  # the export could not finish in time: said, not hidden
    assert not [word for word in NOISE if word in done.stderr], done.stderr
