"""Ctrl-C at every phase of the demo, in process: warm-up, traffic, the summary, the flush and
the shutdown. Each exits 130 (the live tests send a real SIGINT to a real process; these reach
every phase on every change)."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest

from symfonic_otel.demo import runner, scenarios
from symfonic_otel.demo.flush import ExportWarnings, bounded_flush
from symfonic_otel.demo.runner import EXIT_INTERRUPTED, DemoOptions, run_demo
from symfonic_otel.demo.traffic import Traffic
from symfonic_otel.export.handle import Telemetry

PARTIAL = "Interrupted: partial summary of the runs so far."


@pytest.fixture(autouse=True)
def _quick_models(monkeypatch: pytest.MonkeyPatch) -> None:
    # The phases, not the latencies, are under test: the models answer 10 times sooner (a
    # cancelled run's deadline, half the slow latency, scales with them).
    monkeypatch.setattr(scenarios, "FAST", scenarios.FAST / 10)
    monkeypatch.setattr(scenarios, "SLOW", scenarios.SLOW / 10)
    quick = tuple((name, provider, latency / 10) for name, provider, latency in scenarios.MODELS)
    monkeypatch.setattr(scenarios, "MODELS", quick)


def _demo() -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_demo(DemoOptions(runs=12, tenants=2, concurrency=4), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


async def _interrupted_async(*args: Any, **kwargs: Any) -> None:
    raise KeyboardInterrupt


def _interrupted(*args: Any, **kwargs: Any) -> None:
    raise KeyboardInterrupt


def test_an_uninterrupted_demo_exits_0_with_a_full_summary() -> None:
    code, out, _ = _demo()
    assert code == 0
    assert PARTIAL not in out


@pytest.mark.parametrize("method", ["warm_up", "run_count"])
def test_ctrl_c_in_the_traffic_exits_130_with_a_partial_summary(
    monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    monkeypatch.setattr(Traffic, method, _interrupted_async)
    code, out, _ = _demo()
    assert code == EXIT_INTERRUPTED
    assert PARTIAL in out


def test_ctrl_c_while_the_summary_prints_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "render_summary", _interrupted)
    code, _, _ = _demo()
    assert code == EXIT_INTERRUPTED


def test_ctrl_c_during_the_flush_exits_130_and_says_what_may_be_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runner, "bounded_flush", _interrupted)
    code, out, err = _demo()
    assert code == EXIT_INTERRUPTED
    assert "Interrupted while sending the telemetry" in out + err


def test_ctrl_c_during_the_shutdown_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    original: Callable[..., Any] = Telemetry.shutdown

    def shutdown_then_interrupted(self: Telemetry, *args: Any, **kwargs: Any) -> Any:
        original(self, *args, **kwargs)  # the providers still shut down: no leak into others
        raise KeyboardInterrupt

    monkeypatch.setattr(Telemetry, "shutdown", shutdown_then_interrupted)
    code, _, _ = _demo()
    assert code == EXIT_INTERRUPTED


@pytest.mark.parametrize(
    ("interrupt", "budget_s"),
    [(False, runner.FLUSH_BUDGET_S), (True, runner.INTERRUPTED_FLUSH_BUDGET_S)],
)
def test_the_flush_waits_its_full_budget_unless_the_user_interrupted(
    monkeypatch: pytest.MonkeyPatch, interrupt: bool, budget_s: float
) -> None:
    assert runner.INTERRUPTED_FLUSH_BUDGET_S < runner.FLUSH_BUDGET_S  # after Ctrl-C: shorter
    budgets: list[float] = []

    def recorded(telemetry: Telemetry, warnings: ExportWarnings, budget: float) -> bool:
        budgets.append(budget)  # then the real flush, on that budget
        return bounded_flush(telemetry, warnings, budget)

    monkeypatch.setattr(runner, "bounded_flush", recorded)
    if interrupt:
        monkeypatch.setattr(Traffic, "run_count", _interrupted_async)
    code, _, _ = _demo()
    assert code == (EXIT_INTERRUPTED if interrupt else 0)
    assert budgets == [budget_s]
