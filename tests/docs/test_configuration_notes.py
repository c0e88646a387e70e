"""The configuration notes stay true: every variable the package reads is listed, and the
code example is the file the suite runs."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTES = ROOT / "docs" / "configuration-notes.md"
EXAMPLE = ROOT / "docs" / "examples" / "prometheus_only.py"
VARIABLE = re.compile(r"OTEL_[A-Z0-9_]+")
# Modules that name OpenTelemetry's variables as constants.
_ENV_MODULES = frozenset(
    {"opentelemetry.environment_variables", "opentelemetry.sdk.environment_variables"}
)


def _variables_read() -> set[str]:
    """Variable names in the package's code: string constants and the SDK's named constants."""
    found: set[str] = set()
    for path in (ROOT / "symfonic_otel").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in _ENV_MODULES:
                found.update(alias.name for alias in node.names)
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and VARIABLE.fullmatch(node.value)
            ):
                found.add(node.value)
    return found


def test_every_variable_the_package_reads_is_listed() -> None:
    read = _variables_read()
    assert "OTEL_INSTRUMENTATION_SYMFONIC_AGENT_NAME" in read  # the scan sees our own
    assert "OTEL_TRACES_EXPORTER" in read  # and the SDK's named constants
    table = NOTES.read_text(encoding="utf-8").split("## Environment variables", 1)[1]
    table = table.split("\n## ", 1)[0]
    listed = set(VARIABLE.findall(table))
    assert read - listed == set()


def test_the_code_example_is_the_file_the_suite_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", NOTES.read_text(encoding="utf-8"), flags=re.S)
    assert blocks == [EXAMPLE.read_text(encoding="utf-8")]
