"""The framework pages' code is the example files, and the examples do what their comments say.

Every Python block of ``docs/frameworks/openai-agents.md`` and ``pydantic-ai.md`` is the full
text of a file in ``docs/examples/``. The bail examples run (scripted models, no network) and
print what their ``# ...`` comments say; the setup examples run with the exporters off and
print nothing (the library prints nothing).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
EXAMPLES = DOCS / "examples"
PAGES = {
    "openai-agents.md": ("openai_agents_setup.py", "openai_agents_bail.py"),
    "pydantic-ai.md": ("pydantic_ai_setup.py", "pydantic_ai_bail.py"),
}


def _run(example: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / example)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
    )


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_python_block_of_the_page_is_an_example_file(page: str) -> None:
    text = (DOCS / "frameworks" / page).read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    files = [(EXAMPLES / name).read_text(encoding="utf-8") for name in PAGES[page]]
    assert blocks == files


@pytest.mark.parametrize("example", ["openai_agents_bail.py", "pydantic_ai_bail.py"])
def test_the_bail_example_prints_what_its_comments_say(example: str) -> None:
    code = (EXAMPLES / example).read_text(encoding="utf-8")
    expected = re.findall(r"print\(.*\)  # (.*)$", code, flags=re.M)
    done = _run(example)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected


@pytest.mark.parametrize("example", ["openai_agents_setup.py", "pydantic_ai_setup.py"])
def test_the_setup_example_runs_and_prints_nothing(example: str) -> None:
    done = _run(
        example,
        OTEL_TRACES_EXPORTER="none",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        # The model is built, never called: a placeholder key, and a base URL nothing listens on.
        OPENAI_API_KEY="placeholder-not-a-key",
        OPENAI_BASE_URL="http://127.0.0.1:9/v1",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
