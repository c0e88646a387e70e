"""The framework adapters are optional extras: the core never imports them, and importing one
without its framework fails with a message naming the extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_the_core_never_imports_the_frameworks() -> None:
    done = _python(
        "import sys, symfonic_otel, symfonic_otel.handler, symfonic_otel.langchain\n"
        "print(sorted(m for m in ('agents', 'pydantic_ai', 'llama_index', 'smolagents',\n"
        "       'google.adk', 'strands', 'crewai', 'haystack', 'dspy', 'agno',\n"
        "       'agent_framework', 'semantic_kernel', 'claude_agent_sdk') if m in sys.modules))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("symfonic_otel.openai_agents", "agents", "pip install -e '.[openai-agents]'"),
        ("symfonic_otel.pydantic_ai", "pydantic_ai", "pip install -e '.[pydantic-ai]'"),
        ("symfonic_otel.llama_index", "llama_index.core", "pip install -e '.[llama-index]'"),
        ("symfonic_otel.smolagents", "smolagents", "pip install -e '.[smolagents]'"),
        ("symfonic_otel.google_adk", "google.adk", "pip install -e '.[google-adk]'"),
        ("symfonic_otel.strands", "strands", "pip install -e '.[strands]'"),
        ("symfonic_otel.crewai", "crewai", "pip install -e '.[crewai]'"),
        ("symfonic_otel.haystack", "haystack", "pip install -e '.[haystack]'"),
        ("symfonic_otel.dspy", "dspy", "pip install -e '.[dspy]'"),
        ("symfonic_otel.agno", "agno.agent", "pip install -e '.[agno]'"),
        (
            "symfonic_otel.agent_framework",
            "agent_framework",
            "pip install -e '.[agent-framework]'",
        ),
        ("symfonic_otel.semantic_kernel", "semantic_kernel", "pip install -e '.[semantic-kernel]'"),
        (
            "symfonic_otel.claude_agent_sdk",
            "claude_agent_sdk",
            "pip install -e '.[claude-agent-sdk]'",
        ),
    ],
)
def test_a_missing_framework_names_the_extra(module: str, blocked: str, extra: str) -> None:
    done = _python(f"import sys\nsys.modules[{blocked!r}] = None\nimport {module}")
    assert done.returncode != 0
    assert "ImportError" in done.stderr and extra in done.stderr
