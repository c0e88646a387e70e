"""The CLI's exit statuses, in process (``cli.main`` called directly): the fast lane's copy of
the subprocess tests for the paths a signal or a missing subcommand takes."""

from __future__ import annotations

import importlib.abc
import signal
import sys
from collections.abc import Sequence
from types import FrameType, ModuleType
from typing import Any

import pytest

from symfonic_otel import cli
from symfonic_otel.demo.traffic import Traffic


def test_dashboards_without_an_action_prints_its_help_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["dashboards"]) == cli.EXIT_USAGE == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("usage: symfonic-otel dashboards [-h] {export}")


def test_no_command_prints_the_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert capsys.readouterr().err.startswith("usage: symfonic-otel [-h]")


class _InterruptedImport(importlib.abc.MetaPathFinder):
    """Ctrl-C landing while the demo's modules load."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> None:
        if fullname == "symfonic_otel.demo":
            raise KeyboardInterrupt


def test_ctrl_c_while_the_demo_loads_exits_130_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delitem(sys.modules, "symfonic_otel.demo")
    monkeypatch.setattr(sys, "meta_path", [_InterruptedImport(), *sys.meta_path])
    assert cli.main(["demo", "--runs", "1"]) == cli.EXIT_INTERRUPTED == 130
    assert capsys.readouterr().err == "symfonic-otel: interrupted\n"


async def _terminated_then_finished(*args: Any, **kwargs: Any) -> None:
    signal.raise_signal(signal.SIGTERM)  # handed to the app's own SIGINT handler, which goes on


def test_a_sigterm_that_did_not_stop_the_demo_leaves_its_exit_status_0(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGTERM takes Ctrl-C's path; a SIGINT handler of the application's own that lets the
    demo go on means the demo finished: 143 is only for a demo the signal stopped."""
    seen: list[int] = []

    def own_sigint(signum: int, frame: FrameType | None) -> None:
        seen.append(signum)

    monkeypatch.setattr(Traffic, "run_count", _terminated_then_finished)
    previous = signal.signal(signal.SIGINT, own_sigint)
    try:
        code = cli.main(["demo", "--runs", "12", "--tenants", "2"])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == [signal.SIGINT]
    assert code == 0
    assert "Interrupted" not in capsys.readouterr().out


@pytest.mark.parametrize("fails", [False, True], ids=["finished", "refused"])
def test_the_demo_hands_back_the_applications_own_sigterm_handler(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fails: bool
) -> None:
    """A program that runs the demo through ``cli.main`` keeps its SIGTERM handler: the CLI's
    own is installed for the demo only, whether it finished or was refused."""
    import symfonic_otel.demo

    during: list[object] = []

    def run_demo(*args: Any, **kwargs: Any) -> int:
        during.append(signal.getsignal(signal.SIGTERM))
        if fails:
            raise symfonic_otel.demo.DemoError("no such scenario")
        return 0

    def own_sigterm(signum: int, frame: FrameType | None) -> None:
        raise AssertionError("not called")

    monkeypatch.setattr(symfonic_otel.demo, "run_demo", run_demo)
    previous = signal.signal(signal.SIGTERM, own_sigterm)
    try:
        code = cli.main(["demo", "--runs", "1"])
        after = signal.getsignal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert code == (cli.EXIT_USAGE if fails else 0)
    assert len(during) == 1 and callable(during[0]) and during[0] is not own_sigterm
    assert after is own_sigterm
    capsys.readouterr()
