"""The README's runnable example does what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

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
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    # structlog's default logger prints to stdout too: the silent bail's INFO line is expected.
    lines = out.getvalue().splitlines()
    logged = [line for line in lines if "react: empty final_response on terminator" in line]
    printed = [line.strip() for line in lines if line not in logged]
    assert printed == expected
    assert len(logged) == 1


def test_quick_start_commands_are_the_ones_ci_runs() -> None:
    quick_start = _section("Quick start")
    commands = re.findall(r"^(pip install .*?)\s+#", quick_start, flags=re.M)
    assert commands[0] == "pip install -e . && symfonic-otel demo"
    assert commands[1] == "pip install -e '.[test]' && pytest"
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -q -e '.[test]'" in ci
    assert ci.rstrip().splitlines()[-1] == "pytest"
