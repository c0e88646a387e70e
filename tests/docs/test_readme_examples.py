"""The README is a short front door whose code is the docs' tested examples, verbatim."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
EXAMPLES = ROOT / "docs" / "examples"
MAX_LINES = 295  # 280 before the table of every framework's way in
# The README's code blocks, in order: each is one of the files test_docs_examples.py runs.
README_EXAMPLES = [
    "symfonic_events.py",
    "react_agent.py",
    "langchain_agent.py",
    "instrumentor.sh",
    "prometheus_export.py",
    "otlp_export.py",
]


def _text() -> str:
    return README.read_text(encoding="utf-8")


def _section(title: str) -> str:
    return _text().split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_readme_code_is_the_tested_examples_verbatim() -> None:
    blocks = re.findall(r"```(python|bash)\n(.*?)```", _text(), flags=re.S)
    examples = {path.read_text(encoding="utf-8"): path.name for path in EXAMPLES.iterdir()}
    shown = [examples[code] for _, code in blocks if code in examples]
    assert shown == README_EXAMPLES
    # Every Python block is one of them: no untested Python in the README.
    python = [code for lang, code in blocks if lang == "python"]
    assert all(code in examples for code in python)
    assert len(python) == sum(name.endswith(".py") for name in README_EXAMPLES)


def test_quick_start_commands_are_the_ones_ci_runs() -> None:
    quick_start = _section("Quick start")
    commands = re.findall(r"^(pip install .*?)\s+#", quick_start, flags=re.M)
    assert commands[0] == "pip install -e . && symfonic-otel demo"
    assert commands[1] == "pip install -e '.[test]' && pytest"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -q -e '.[test]'" in ci
    assert ci.rstrip().splitlines()[-1] == "pytest"
    # The docs build is part of CI, with the docs extra that the test extra pulls in.
    assert re.search(r"^(\S+=\S+ )*mkdocs build --strict\b", ci, flags=re.M)
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert "symfonic-otel[docs]" in extras["test"]
    assert {re.split(r"[<>=\[]", dep)[0] for dep in extras["docs"]} == {
        "mkdocs",
        "mkdocs-material",
        "mkdocstrings",
    }


def test_readme_is_short_and_speaks_only_of_what_users_have() -> None:
    text = _text()
    assert len(text.splitlines()) <= MAX_LINES
    for internal in ("seed", "DESIGN"):
        assert internal not in text, internal
    assert not re.search(r"SymfonicAgent\b", text)  # SymfonicAgentFramework is an adapter's


def test_readme_links_to_files_that_exist() -> None:
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", _text()):
        assert (ROOT / target).exists(), target


def test_license_file_matches_the_package_metadata() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert "END OF TERMS AND CONDITIONS" in license_text


def test_readme_shows_the_pages_counters_and_links_the_operator_path() -> None:
    text = _text()
    rules = (ROOT / "dashboards" / "prometheus" / "symfonic-rules.yml").read_text()
    for counter in ("symfonic_react_silent_bails_total", "symfonic_agent_runs_total"):
        assert counter in text and counter in rules, counter
    assert "docs/operators/index.md#from-install-to-a-page" in text
    guide = (ROOT / "docs" / "operators" / "index.md").read_text()
    assert "\n## From install to a page\n" in guide
    for term in (
        "**synthesis fallback**",
        "**fabrication check**",
        "on_agent_start",
        "agent_start",
    ):
        assert term in text, term
    assert "shutdown_on_sigterm" in text


def test_other_frameworks_table_lists_every_adapter_with_its_extra_and_page() -> None:
    # Every adapter package (one with an ``__all__`` under symfonic_otel/ whose docs page is in
    # docs/frameworks/) has a row: its entry point, its extra as pyproject names it, its page.
    section = _text().split("### Other agent frameworks\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    pages = {path.name for path in (ROOT / "docs" / "frameworks").glob("*.md")}
    linked = {name for row in rows for name in re.findall(r"docs/frameworks/([\w-]+\.md)", row)}
    assert linked == pages
    for row in rows[1:]:
        extra = row.split("|")[2].strip().strip("`")
        assert extra == "none" or extra in extras, row
    for page in pages - {"span-processor.md"}:
        package = ROOT / "symfonic_otel" / page.removesuffix(".md").replace("-", "_")
        names = re.search(r"__all__ = \[([^]]+)\]", (package / "__init__.py").read_text("utf-8"))
        assert names is not None, package
        entries = {name.strip(' "') for name in names.group(1).split(",")}
        assert any(f"`{name}`" in row for row in rows for name in entries), package.name
