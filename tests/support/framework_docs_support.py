"""Checks of a framework page whose framework lives in an environment of its own: every Python
block of the page is the full text of an example file, and the bail example, run by this
environment's interpreter, prints what its ``# ...`` comments say."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
EXAMPLES = DOCS / "examples"


def assert_blocks_are_examples(page: str, *examples: str) -> None:
    text = (DOCS / "frameworks" / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks == [(EXAMPLES / name).read_text(encoding="utf-8") for name in examples]


def assert_prints_its_comments(example: str) -> None:
    code = (EXAMPLES / example).read_text(encoding="utf-8")
    expected = re.findall(r"print\(.*\)  # (.*)$", code, flags=re.M)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / example)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected


def assert_runs_silently(example: str) -> None:
    """A setup example runs with the exporters off and prints nothing (the library prints
    nothing on its own)."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / example)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={
            **os.environ,
            "PYTHONPATH": str(REPO),
            "OTEL_TRACES_EXPORTER": "none",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
        },
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
