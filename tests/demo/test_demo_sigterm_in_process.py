"""SIGTERM to ``symfonic-otel demo``, in process: the same path as Ctrl-C, and exit status 143.

The live test sends a real SIGTERM to a demo subprocess; this one raises it inside the demo's
traffic through ``cli.main`` itself, so every change to the CLI's signal handling meets it in
the fast lane.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import pytest

from symfonic_otel import cli
from symfonic_otel.demo.traffic import Traffic

PARTIAL = "Interrupted: partial summary of the runs so far."


async def _terminated(*args: Any, **kwargs: Any) -> None:
    signal.raise_signal(signal.SIGTERM)  # the CLI's handler is installed while the demo runs
    await asyncio.sleep(30)  # cancelled by the interrupt long before


@pytest.mark.parametrize(
    "sigint",
    [signal.default_int_handler, signal.SIG_IGN],
    ids=["ctrl-c-handled", "ctrl-c-ignored-as-in-a-background-job"],
)
def test_sigterm_during_the_traffic_exits_143_with_a_partial_summary(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sigint: signal.Handlers,
) -> None:
    # A shell starts a background job (`symfonic-otel demo &`, nohup) with SIGINT ignored:
    # SIGTERM, which takes Ctrl-C's path, must stop the demo all the same.
    monkeypatch.setattr(Traffic, "run_count", _terminated)
    previous_sigint = signal.signal(signal.SIGINT, sigint)
    before = signal.getsignal(signal.SIGTERM)
    try:
        code = cli.main(["demo", "--runs", "12", "--tenants", "2"])
    finally:
        signal.signal(signal.SIGINT, previous_sigint)
    out = capsys.readouterr().out
    assert code == cli.EXIT_TERMINATED == 143
    assert PARTIAL in out
    assert signal.getsignal(signal.SIGTERM) is before  # the CLI gives SIGTERM back
