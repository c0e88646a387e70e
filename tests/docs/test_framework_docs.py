"""The framework pages' code is the example files, and the examples do what their comments say.

Every Python block of each framework page in ``docs/frameworks/`` (``PAGES``) is the full
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
    "llama-index.md": ("llama_index_setup.py", "llama_index_bail.py"),
    "smolagents.md": ("smolagents_setup.py", "smolagents_bail.py"),
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


@pytest.mark.parametrize("example", [pair[1] for pair in PAGES.values()])
def test_the_bail_example_prints_what_its_comments_say(example: str) -> None:
    code = (EXAMPLES / example).read_text(encoding="utf-8")
    expected = re.findall(r"print\(.*\)  # (.*)$", code, flags=re.M)
    done = _run(example)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected


@pytest.mark.parametrize("example", [pair[0] for pair in PAGES.values()])
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


def test_the_pydantic_ai_instrumentation_routes_the_page_names() -> None:
    """``pydantic-ai.md``: ``capabilities=[Instrumentation(...)]``, ``agent.instrument = ...`` and
    ``Agent.instrument_all()`` emit the ``invoke_agent`` span in the installed Pydantic AI; the
    ``Agent(instrument=True)`` keyword is a ``TypeError``."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.test import TestModel

    page = (DOCS / "frameworks" / "pydantic-ai.md").read_text(encoding="utf-8")
    for route in (
        "capabilities=[Instrumentation(",
        "agent.instrument = ",
        "Agent.instrument_all()",
    ):
        assert route in page

    def spans_of(route: str) -> list[str]:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        settings = InstrumentationSettings(tracer_provider=provider)
        if route == "capability":
            agent = Agent(TestModel(), name="a", capabilities=[Instrumentation(settings=settings)])
        elif route == "attribute":
            agent = Agent(TestModel(), name="a")
            agent.instrument = settings
        else:
            Agent.instrument_all(settings)
            agent = Agent(TestModel(), name="a")
        try:
            agent.run_sync("hi")
        finally:
            Agent.instrument_all(False)
        return [span.name for span in exporter.get_finished_spans()]

    for route in ("capability", "attribute", "all"):
        assert "invoke_agent a" in spans_of(route), route
    with pytest.raises(TypeError, match="instrument"):
        Agent(TestModel(), instrument=True)  # type: ignore[call-arg]
