"""Every framework adapter hands its facts to the invocation layer and keeps no run bookkeeping.

Read from the source with ``ast``: no adapter module defines a run class (a class named like a
run: ``CrewRun``, ``_Run``, ``RunIndex``, ``RunBook``), a guard of its own (a ``guard`` function
or a lock to run hooks under), or drives the core handler's run calls itself (starting or ending
a run, a bail, a model call, an interrupt: the layer's verdicts and turns).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

PACKAGE: Final = Path(__file__).resolve().parents[2] / "symfonic_otel"
ADAPTERS: Final = (
    "agent_framework",
    "agno",
    "claude_agent_sdk",
    "crewai",
    "dspy",
    "google_adk",
    "haystack",
    "llama_index",
    "openai_agents",
    "pydantic_ai",
    "semantic_kernel",
    "smolagents",
    "strands",
)
# The core handler's calls that make a run, its turns and its verdict: the layer's alone.
RUN_CALLS: Final = frozenset(
    {"agent_start", "agent_end", "llm_end", "react_loop_end", "interrupt", "adapter_failed"}
)
LOCKS: Final = frozenset({"Lock", "RLock"})
GUARD: Final = re.compile(r"_*guard(ed)?")  # ``guard``, ``_guard``, ``_guarded``; not ``guardrail``


def _run_bookkeeping(source: str) -> Iterator[str]:
    """What in ``source`` looks like run bookkeeping of its own, one line per finding."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and ("Run" in node.name or node.name == "_Paused"):
            yield f"class {node.name} (line {node.lineno})"
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and GUARD.fullmatch(
            node.name
        ):
            yield f"def {node.name} (line {node.lineno})"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if name in RUN_CALLS:
                yield f"call {name} (line {node.lineno})"
            elif name in LOCKS:
                yield f"lock {name} (line {node.lineno})"


def test_the_reader_finds_each_kind_of_bookkeeping() -> None:
    """The check's own check: each kind of finding is seen in a module that has it."""
    source = """
import threading
class CrewRun: ...
class RunIndex: ...
class _Paused: ...
def _guarded(kind): ...
lock = threading.RLock()
handler.agent_end(end)
handler.react_loop_end(event)
"""
    found = [line.split(" (")[0] for line in _run_bookkeeping(source)]
    assert found == [
        "class CrewRun",
        "class RunIndex",
        "class _Paused",
        "def _guarded",
        "lock RLock",
        "call agent_end",
        "call react_loop_end",
    ]
    innocent = "class SymfonicListener: ...\ndef guardrail(): ...\nbook.end(run_id, 'error')"
    assert list(_run_bookkeeping(innocent)) == []


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_no_adapter_keeps_run_bookkeeping_of_its_own(adapter: str) -> None:
    modules = sorted((PACKAGE / adapter).glob("*.py"))
    assert modules, f"no modules under symfonic_otel/{adapter}"
    found = {
        path.name: findings
        for path in modules
        if (findings := list(_run_bookkeeping(path.read_text(encoding="utf-8"))))
    }
    assert found == {}, f"symfonic_otel/{adapter} keeps run bookkeeping: {found}"
