"""The configuration reference names every public option and every environment variable."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from symfonic_otel import LangChainCallbackHandler, OTelCallbackHandler, configure_telemetry

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference" / "configuration.md"


def _section(title: str) -> str:
    return PAGE.read_text(encoding="utf-8").split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _options(function: object) -> set[str]:
    parameters = inspect.signature(function).parameters.values()  # type: ignore[arg-type]
    return {p.name for p in parameters if p.kind is p.KEYWORD_ONLY}


def test_every_configure_telemetry_argument_is_in_its_table() -> None:
    section = _section("`configure_telemetry`")
    for name in _options(configure_telemetry):
        assert re.search(rf"^\| [^|]*`{name}`", section, flags=re.M), name


def test_every_handler_argument_is_in_its_table() -> None:
    section = _section("`OTelCallbackHandler`")
    for name in _options(OTelCallbackHandler.__init__):
        assert re.search(rf"^\| [^|]*`{name}`", section, flags=re.M), name


def test_the_langchain_handler_arguments_are_named() -> None:
    section = _section("`LangChainCallbackHandler`")
    for name in _options(LangChainCallbackHandler.__init__):
        assert f"{name}=" in section, name


def test_every_environment_variable_the_package_reads_is_listed() -> None:
    table = _section("Environment variables")
    source = "\n".join(p.read_text() for p in (ROOT / "symfonic_otel").rglob("*.py"))
    # Complete names only: a prefix such as ``OTEL_BSP_`` in a comment is not a variable.
    named = set(re.findall(r"\bOTEL_[A-Z0-9_]*[A-Z0-9]\b", source))
    assert named, "the package reads OTEL_* variables"
    for name in sorted(named):
        assert name in table, name
