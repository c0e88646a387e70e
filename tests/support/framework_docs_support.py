"""Checks of a framework page whose framework lives in an environment of its own: every Python
block of the page is the full text of an example file, and the bail example, run by this
environment's interpreter, prints what its ``# ...`` comments say."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from tests.support.processes import run_ok

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
    done = run_ok(
        [sys.executable, str(EXAMPLES / example)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.stdout.splitlines() == expected


def assert_runs_silently(example: str) -> None:
    """A setup example runs with the exporters off and prints nothing (the library prints
    nothing on its own)."""
    done = run_ok(
        [sys.executable, str(EXAMPLES / example)],
        env={
            **os.environ,
            "PYTHONPATH": str(REPO),
            "OTEL_TRACES_EXPORTER": "none",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
        },
    )
    assert done.stdout == ""


class FrameworkPageChecks:
    """The three checks every framework page gets; a subclass names the page (``page``), the
    module its framework imports as (``module``) and why a run without it skips (``reason``).
    ``setup`` and ``bail`` name its example files."""

    page: str
    setup: str
    bail: str
    module: str
    reason: str

    def test_every_python_block_of_the_page_is_an_example_file(self) -> None:
        assert_blocks_are_examples(self.page, self.setup, self.bail)

    def test_the_bail_example_prints_what_its_comments_say(self) -> None:
        pytest.importorskip(self.module, reason=self.reason)
        assert_prints_its_comments(self.bail)

    def test_the_setup_example_runs_and_prints_nothing(self) -> None:
        pytest.importorskip(self.module, reason=self.reason)
        assert_runs_silently(self.setup)
