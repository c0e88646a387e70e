"""The fast lane's marking: a test is live exactly when it starts a process or a server."""

from __future__ import annotations

import shlex
import tomllib
from pathlib import Path

import tests.demo.test_demo_cli as demo_cli
import tests.demo.test_demo_interrupt as demo_interrupt
import tests.export.test_otlp_export as otlp_export
import tests.package.test_names_module as names_module
from tests.support.live_marking import is_live

TESTS = Path(__file__).resolve().parents[1]
PYPROJECT = TESTS.parent / "pyproject.toml"


def test_a_test_calling_a_helper_that_runs_a_subprocess_is_live() -> None:
    # the test -> _run (a helper of its module) -> subprocess.run
    assert is_live(demo_cli.test_a_different_seed_gives_different_traffic)


def test_a_test_using_a_class_that_starts_a_process_is_live() -> None:
    # Demo.__init__ starts the CLI with subprocess.Popen
    assert is_live(demo_interrupt.test_ctrl_c_during_warm_up_still_exits_130_with_a_summary)


def test_an_in_process_test_is_not_live() -> None:
    assert not is_live(otlp_export.test_bad_arguments_are_rejected_by_name)
    assert not is_live(demo_cli.test_histogram_quantile_interpolates_like_prometheus)
    assert not any(
        is_live(value) for name, value in vars(names_module).items() if name.startswith("test_")
    )


def test_pytest_q_still_prints_the_pass_count() -> None:
    # pytest prints its "N passed" line down to verbosity -1: one -q. Each -q in addopts would
    # add to the one on the command line, and `pytest -q` would end without a count.
    options = tomllib.loads(PYPROJECT.read_text())["tool"]["pytest"]["ini_options"]
    quiet = [flag for flag in shlex.split(options["addopts"]) if flag in {"-q", "--quiet"}]
    assert not quiet, f"addopts holds {quiet}: `pytest -q` would print no pass count"


def test_tests_top_folder_holds_only_the_conftest() -> None:
    # Helpers live in tests/support and have one name, tests.support.<module>.
    assert sorted(path.name for path in TESTS.glob("*.py")) == ["conftest.py"]
