"""`pytest` and `pytest -q` with the project's configuration end with the pass count."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("quiet", [[], ["-q"]], ids=["plain", "quiet"])
def test_the_last_line_is_the_pass_count(quiet: list[str]) -> None:
    one_file = "tests/package/test_names_module.py"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *quiet, "-n", "0", "-p", "no:cacheprovider", one_file],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    last = [line for line in result.stdout.splitlines() if line.strip()][-1]
    assert re.search(r"\b\d+ passed\b", last), result.stdout[-2000:]
