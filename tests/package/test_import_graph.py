"""The package's floor plan holds: no import circle, layers import downwards, modules stay small.

The graph is read from the source with ``ast``, so it sees every import a runtime trace could
miss: inside functions (the lazy ones), under ``if TYPE_CHECKING:``, in branches never taken.
An import of a package's attribute that is a module (``from symfonic_otel import semconv``) is
an edge to that module; any other name is an edge to the package's ``__init__``. Importing
``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``: those implicit parent edges are left
out, as every module would otherwise import the top ``__init__`` and the graph would say nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Final

import pytest

PACKAGE: Final = Path(__file__).resolve().parents[2] / "symfonic_otel"
MAX_LINES: Final = 400

# layer -> what it must never import. The flow is
#   framework adapters -> invocation -> adapters and handler -> core / export -> emit -> read
#   -> names (semconv, logs)
# so each layer may import only what sits below it.
ADAPTERS: Final = frozenset(
    {
        "symfonic_otel",  # the package's __init__: the public face
        "symfonic_otel.handler",
        "symfonic_otel.instrumentation",
        "symfonic_otel.cli",
        "symfonic_otel.dashboards",
        "symfonic_otel.options",
        "symfonic_otel.langchain",
        "symfonic_otel.agent",
        "symfonic_otel.demo",
        "symfonic_otel.testing",
    }
)
# The framework adapters: each translates its framework's hooks into the invocation layer's
# facts, so they sit above it and nothing but the package's public face imports them.
FRAMEWORK_ADAPTERS: Final = frozenset(
    {
        "symfonic_otel.agent_framework",
        "symfonic_otel.agno",
        "symfonic_otel.claude_agent_sdk",
        "symfonic_otel.crewai",
        "symfonic_otel.dspy",
        "symfonic_otel.google_adk",
        "symfonic_otel.haystack",
        "symfonic_otel.llama_index",
        "symfonic_otel.openai_agents",
        "symfonic_otel.pydantic_ai",
        "symfonic_otel.semantic_kernel",
        "symfonic_otel.smolagents",
        "symfonic_otel.strands",
    }
)
_INVOCATION: Final = "symfonic_otel.invocation"
FORBIDDEN: Final = {
    "read": frozenset(
        {"symfonic_otel.core", "symfonic_otel.emit", "symfonic_otel.export", _INVOCATION}
    ),
    "emit": frozenset({"symfonic_otel.core", "symfonic_otel.export", _INVOCATION}),
    "core": frozenset({"symfonic_otel.export", _INVOCATION}),
    "export": frozenset({"symfonic_otel.core", _INVOCATION}),  # siblings: the handler wires them
    "invocation": FRAMEWORK_ADAPTERS | {"symfonic_otel.export"},
}
# What a layer may import of ADAPTERS: the invocation layer drives the core through the handler.
BELOW: Final[dict[str, frozenset[str]]] = {"invocation": frozenset({"symfonic_otel.handler"})}
# Imports that cross a layer on purpose. None today: add one only with the reason it is right.
ALLOWED_CROSSINGS: Final[dict[tuple[str, str], str]] = {}

# Modules allowed past MAX_LINES, with their ceiling and why they are not split.
LONG_MODULES: Final[dict[str, tuple[int, str]]] = {
    "symfonic_otel.semconv": (
        560,
        "every telemetry name the package writes or reads, in one module on purpose: a semantic "
        "convention change is one edit, and dashboards, rules and tests check against it",
    ),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: Final = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path) -> Iterator[str]:
    """Every module of the package that ``name`` imports, wherever the import statement is."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "symfonic_otel":
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing module's package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            if base.split(".")[0] != "symfonic_otel":
                continue
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                yield submodule if submodule in MODULES else base


GRAPH: Final = {
    name: frozenset(target for target in _imports(name, path) if target != name)
    for name, path in MODULES.items()
}


def _inside(module: str, area: str) -> bool:
    """``module`` is ``area`` or below it (the package itself means its ``__init__`` only)."""
    return module == area or (area != "symfonic_otel" and module.startswith(area + "."))


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in FORBIDDEN else None


def test_the_graph_sees_lazy_and_type_checking_imports() -> None:
    """The reader's own check: both kinds of hidden import are edges of the graph."""
    # ``configure_telemetry`` is imported inside ``__getattr__``, and the LangChain adapter
    # under ``if TYPE_CHECKING:``, in the package's __init__.
    assert "symfonic_otel.export.setup" in GRAPH["symfonic_otel"]
    assert "symfonic_otel.langchain" in GRAPH["symfonic_otel"]
    assert all(target in MODULES for targets in GRAPH.values() for target in targets)


def test_no_module_imports_itself_back() -> None:
    try:
        tuple(TopologicalSorter(GRAPH).static_order())
    except CycleError as error:
        cycle = " -> ".join(error.args[1])
        pytest.fail(f"import circle: {cycle}")


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_each_layer_imports_only_downwards(layer: str) -> None:
    crossings = [
        (module, target)
        for module, targets in GRAPH.items()
        if _layer(module) == layer
        for target in sorted(targets)
        if any(
            _inside(target, area)
            for area in FORBIDDEN[layer] | (ADAPTERS - BELOW.get(layer, frozenset()))
        )
        and (module, target) not in ALLOWED_CROSSINGS
    ]
    assert crossings == [], f"{layer}/ imports upwards: {crossings}"


def test_the_named_exceptions_are_still_needed() -> None:
    """An exception that no longer applies is removed, so the lists stay true."""
    stale = [edge for edge in ALLOWED_CROSSINGS if edge[1] not in GRAPH.get(edge[0], ())]
    assert stale == []
    short = [
        name
        for name in LONG_MODULES
        if name not in MODULES or _line_count(MODULES[name]) <= MAX_LINES
    ]
    assert short == [], f"no longer over {MAX_LINES} lines: drop from LONG_MODULES"


def _line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_modules_stay_under_the_size_bound() -> None:
    too_long = {}
    for name, path in MODULES.items():
        limit = LONG_MODULES.get(name, (MAX_LINES, ""))[0]
        if _line_count(path) > limit:
            too_long[name] = _line_count(path)
    assert too_long == {}, f"over {MAX_LINES} lines (split, or list with a reason): {too_long}"
