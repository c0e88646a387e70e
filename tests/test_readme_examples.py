"""The README's runnable example does what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import structlog

README = Path(__file__).resolve().parent.parent / "README.md"


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_reference_loop_example_prints_what_its_comments_say() -> None:
    code = re.findall(r"```python\n(.*?)```", _section("The reference loop"), flags=re.S)[0]
    expected = [
        line.split("# ", 1)[1].split("   (", 1)[0].split(": ", 1)[0].strip()
        for line in code.splitlines()
        if line.startswith("print(")
    ]
    out = io.StringIO()
    saved, was_configured = structlog.get_config(), structlog.is_configured()
    structlog.reset_defaults()  # as in a fresh application that configures no logging
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    finally:
        if was_configured:
            structlog.configure(**saved)
    # Unconfigured, the package prints nothing: only the example's own print() lines appear.
    printed = [line.strip() for line in out.getvalue().splitlines()]
    assert printed == expected


def test_quick_start_commands_are_the_ones_ci_runs() -> None:
    quick_start = _section("Quick start")
    commands = re.findall(r"^(pip install .*?)\s+#", quick_start, flags=re.M)
    assert commands[0] == "pip install -e . && symfonic-otel demo"
    assert commands[1] == "pip install -e '.[test]' && pytest"
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -q -e '.[test]'" in ci
    assert ci.rstrip().splitlines()[-1] == "pytest"
