"""The span-processor docs page: its code is the examples', its table is what the tests measure,
and the examples do what the page says (run as programs, and counted in memory)."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import re
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from symfonic_otel import semconv
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import restore_unwrapped, wrapt_snapshot
from tests.support.processes import run_ok
from tests.support.span_processor_support import LABELS, visibility_rows

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "frameworks" / "span-processor.md"
EXAMPLES = ROOT / "docs" / "examples"
PYDANTIC_AI_EXAMPLE = EXAMPLES / "span_processor_pydantic_ai.py"
LANGGRAPH_EXAMPLE = EXAMPLES / "span_processor_langgraph.py"
pytestmark = pytest.mark.timeout(120)


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bails_by_tenant(memory: InMemoryTelemetry) -> dict[str, float]:
    found: dict[str, float] = {}
    for attrs, value in memory.points(semconv.SILENT_BAILS.name, include_zeros=True):
        assert isinstance(value, int | float)
        tenant = str(attrs[semconv.TENANT_ID])
        found[tenant] = found.get(tenant, 0) + value
    return found


def runs_by_tenant(memory: InMemoryTelemetry) -> dict[str, float]:
    found: dict[str, float] = {}
    for attrs, value in memory.points(semconv.AGENT_RUNS.name):
        assert isinstance(value, int | float)
        tenant = str(attrs[semconv.TENANT_ID])
        found[tenant] = found.get(tenant, 0) + value
    return found


def test_the_options_table_gives_the_processors_defaults() -> None:
    rows = re.findall(r"^\| `(\w+)` \| `([^`]*)`", PAGE.read_text(), re.MULTILINE)
    parameters = inspect.signature(SilentBailSpanProcessor).parameters
    documented = {name: ast.literal_eval(value) for name, value in rows if name in parameters}
    assert sorted(documented) == sorted(
        [
            "agent_name",
            "max_tenants",
            "max_traces",
            "tenant_attributes",
            "tenant_id",
            "tenant_idle_s",
            "tenant_metadata_key",
            "trace_ttl_s",
        ]
    )
    assert documented == {name: parameters[name].default for name in documented}


def test_the_visibility_table_is_the_measured_one() -> None:
    text = PAGE.read_text()
    table = [
        line
        for line in text.splitlines()
        if line.startswith(tuple(f"| {label} |" for label in LABELS.values()))
    ]
    assert table == visibility_rows()


def test_every_code_block_of_the_page_is_in_an_example() -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.DOTALL)
    assert blocks
    examples = [textwrap.dedent(path.read_text()) for path in sorted(EXAMPLES.glob("*.py"))]
    for block in blocks:
        imports = [line for line in block.splitlines() if line.startswith(("from ", "import "))]
        exec("\n".join(imports), {})  # the names it imports exist where it says
        body = textwrap.dedent(
            "\n".join(line for line in block.splitlines() if line not in imports)
        ).strip()
        assert any(
            body in textwrap.dedent(example) or textwrap.indent(body, "    ") in example
            for example in examples
        ), body


def test_the_pydantic_ai_example_counts_the_looping_tenant_only(
    telemetry: InMemoryTelemetry,
) -> None:
    load(PYDANTIC_AI_EXAMPLE).serve(telemetry.tracer_provider, telemetry.meter_provider)
    assert runs_by_tenant(telemetry) == {"acme": 3, "globex": 3}
    assert bails_by_tenant(telemetry) == {"acme": 0, "globex": 3}


def test_the_langgraph_example_counts_the_looping_tenant_only(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRACELOOP_TRACE_CONTENT", raising=False)  # OpenLLMetry's default
    before = wrapt_snapshot()
    try:
        load(LANGGRAPH_EXAMPLE).serve(telemetry.tracer_provider, telemetry.meter_provider)
    finally:
        restore_unwrapped(before)
    assert runs_by_tenant(telemetry) == {"acme": 1, "globex": 1}
    assert bails_by_tenant(telemetry) == {"acme": 0, "globex": 1}


@pytest.mark.parametrize("example", [PYDANTIC_AI_EXAMPLE, LANGGRAPH_EXAMPLE], ids=lambda p: p.stem)
def test_the_examples_run_as_programs(example: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "METRICS_PORT": "0",
    }
    done = run_ok(
        [sys.executable, str(example)],
        env=env,
        timeout=100,
    )
    assert done.stdout == ""
