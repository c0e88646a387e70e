"""Mistakes in setting telemetry up that a newcomer makes, and the message each one gets."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from symfonic_otel import configure_telemetry
from symfonic_otel.export.prometheus import PrometheusPortError

ROOT = Path(__file__).resolve().parents[2]

TWICE = """
import warnings
from symfonic_otel import configure_telemetry

first = configure_telemetry(service_name="a", otlp=False)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    local = configure_telemetry(service_name="b", otlp=False, set_global=False)
    assert not caught, [str(w.message) for w in caught]  # a local second setup is fine
    second = configure_telemetry(service_name="c", otlp=False)
for w in caught:
    print(w.category.__name__, w.filename == "<string>", w.message)
print("global", first.is_global, second.is_global)
"""


def test_a_second_global_configure_telemetry_warns_at_the_callers_line() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", TWICE], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    warned = [line for line in lines if line.startswith("RuntimeWarning")]
    assert len(warned) == 1, done.stdout
    assert warned[0].startswith("RuntimeWarning True ")  # attributed to the caller's line
    assert "is NOT global" in warned[0] and "set_global=False" in warned[0]
    assert lines[-1] == "global True False"


def test_a_busy_prometheus_port_is_an_oserror_with_the_hint() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(OSError) as raised:
            configure_telemetry(
                service_name="t", otlp=False, prometheus_port=port, set_global=False
            )
    assert isinstance(raised.value, PrometheusPortError)
    assert raised.value.errno == errno.EADDRINUSE
    assert "pick another, or 0 for a free one" in str(raised.value)
    assert f"prometheus_port {port}" in str(raised.value)
    assert isinstance(raised.value, ValueError)  # what it was before, still caught as such


@pytest.mark.parametrize("host", ["192.0.2.1", "no-such-host.invalid"])
def test_a_host_that_is_not_this_machine_gets_the_host_hint_not_the_port_one(host: str) -> None:
    with pytest.raises(PrometheusPortError) as raised:
        configure_telemetry(
            service_name="t",
            otlp=False,
            prometheus_port=0,
            prometheus_host=host,
            set_global=False,
        )
    message = str(raised.value)
    assert f"prometheus_host {host!r}" in message
    assert "not an address of this machine" in message
    assert "pick another" not in message


def test_port_zero_picks_a_free_port() -> None:
    with configure_telemetry(
        service_name="t", otlp=False, prometheus_port=0, set_global=False
    ) as telemetry:
        assert telemetry.prometheus_port not in (None, 0)
