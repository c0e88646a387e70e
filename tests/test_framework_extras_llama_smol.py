"""The LlamaIndex and smolagents adapters are optional extras: the core never imports their
frameworks, and importing an adapter without its framework names the extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_the_core_never_imports_llama_index_or_smolagents() -> None:
    done = _python(
        "import sys, symfonic_otel, symfonic_otel.handler, symfonic_otel.langchain\n"
        "print(sorted(m for m in ('llama_index', 'smolagents') if m in sys.modules))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("symfonic_otel.llama_index", "llama_index.core", "symfonic-otel[llama-index]"),
        ("symfonic_otel.smolagents", "smolagents", "symfonic-otel[smolagents]"),
    ],
)
def test_a_missing_framework_names_the_extra(module: str, blocked: str, extra: str) -> None:
    done = _python(f"import sys\nsys.modules[{blocked!r}] = None\nimport {module}")
    assert done.returncode != 0
    assert "ImportError" in done.stderr and extra in done.stderr
