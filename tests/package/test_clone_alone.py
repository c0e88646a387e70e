"""The suite needs nothing beside the repository: the provider-wire tests pass in a bare copy.

The repository's files (as git lists them) are copied into a fresh temporary directory, with
nothing above or beside them, and the test files that replay provider bodies over the loopback
wire run there in a subprocess, importing the package from that copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import run_text

ROOT = Path(__file__).resolve().parents[2]
WIRE_TESTS = (
    "tests/agent/test_agent_providers.py",
    "tests/agent/test_agent_resolver.py",
    "tests/langchain/test_langchain_provider_content.py",
    "tests/langchain/test_langchain_call_attributes.py",
    "tests/core/test_handler_call_inputs.py",
)

pytestmark = pytest.mark.live


def _repository_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    names = [name for name in listed.stdout.decode().split("\0") if name]
    return [name for name in names if (ROOT / name).is_file()]


def _copy(into: Path) -> Path:
    clone = into / "symfonic-otel"
    for name in _repository_files():
        target = clone / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return clone


def test_no_test_reads_files_from_outside_the_repository() -> None:
    for name in _repository_files():
        if (
            name.startswith("tests/")
            and name.endswith(".py")
            and name != Path(__file__).resolve().relative_to(ROOT).as_posix()
        ):
            assert "provider-recordings" not in (ROOT / name).read_text(), name


@pytest.mark.timeout(900)
def test_provider_wire_tests_pass_in_a_bare_copy(tmp_path: Path) -> None:
    clone = _copy(tmp_path)
    assert (
        not (tmp_path / "shared").exists()
        and (clone / "tests" / "support" / "provider_bodies" / "__init__.py").is_file()
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PYTHONPATH"))}
    env["PYTHONPATH"] = str(clone)  # the copy's package, not the installed checkout
    where = subprocess.run(
        [sys.executable, "-c", "import symfonic_otel; print(symfonic_otel.__file__)"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(clone)
    result = run_text(
        [
            sys.executable,
            "-m",
            "pytest",
            *WIRE_TESTS,
            "-o",
            "addopts=",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        env=env,
        cwd=clone,
        timeout=840,
    )
    tail = result.stdout[-3000:] + result.stderr[-2000:]
    assert result.returncode == 0, tail
    summary = result.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
    assert "skipped" not in summary, summary  # a test skipped for want of a file proves nothing
