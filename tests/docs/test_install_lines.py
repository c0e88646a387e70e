"""Every README and guide example runs after the install line its page shows.

Fast check: the distributions the shown line installs (the package's requirements plus the
extra's, closed over the requirements of what is installed here) provide every module the
example imports. The live check installs the package with an extra into a fresh virtualenv
(no system site packages) and runs the README's LangChain example there; another runs the
smolagents page's line as written and imports the adapter. Every install line of the package, in
the docs and in the package's own messages, has the one form of the quick start: from a checkout,
``pip install -e .`` or ``pip install -e '.[extra]'`` (the package is on no index).
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Mapping
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.support.processes import run_ok, run_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

# (page, example, the install line the page shows, extra, packages the line names besides).
SHOWN = [
    ("README.md", "symfonic_events.py", "pip install -e .", None, ()),
    ("README.md", "react_agent.py", "pip install -e .", None, ()),
    ("README.md", "langchain_agent.py", "pip install -e '.[langchain]'", "langchain", ()),
    ("README.md", "instrumented_app.py", "pip install -e '.[instrument]'", "instrument", ()),
    ("README.md", "prometheus_export.py", "pip install -e .", None, ()),
    ("README.md", "otlp_export.py", "pip install -e .", None, ()),
    ("docs/getting-started.md", "react_agent.py", "pip install -e .", None, ()),
    (
        "docs/guides/langchain.md",
        "langchain_agent.py",
        "pip install -e '.[langchain]'",
        "langchain",
        (),
    ),
    (
        "docs/guides/instrumentor.md",
        "instrumented_app.py",
        "pip install -e '.[instrument]'",
        "instrument",
        (),
    ),
    (
        "docs/guides/instrumentor.md",
        "instrumentor_in_code.py",
        "pip install -e '.[instrument]'",
        "instrument",
        (),
    ),
    ("docs/step-caps.md", "step_caps.py", "pip install -e '.[langchain]'", "langchain", ()),
    (
        "docs/frameworks/openai-agents.md",
        "openai_agents_setup.py",
        "pip install -e '.[openai-agents]'",
        "openai-agents",
        (),
    ),
    (
        "docs/frameworks/openai-agents.md",
        "openai_agents_bail.py",
        "pip install -e '.[openai-agents]'",
        "openai-agents",
        (),
    ),
    (
        "docs/frameworks/pydantic-ai.md",
        "pydantic_ai_setup.py",
        "pip install -e '.[pydantic-ai]'",
        "pydantic-ai",
        (),
    ),
    (
        "docs/frameworks/pydantic-ai.md",
        "pydantic_ai_bail.py",
        "pip install -e '.[pydantic-ai]'",
        "pydantic-ai",
        (),
    ),
    (
        "docs/frameworks/span-processor.md",
        "span_processor_pydantic_ai.py",
        "pip install -e '.[pydantic-ai]'",
        "pydantic-ai",
        (),
    ),
    (
        "docs/frameworks/span-processor.md",
        "span_processor_langgraph.py",
        "pip install -e '.[langchain]' opentelemetry-instrumentation-langchain",
        "langchain",
        ("opentelemetry-instrumentation-langchain",),
    ),
]


# Every framework page shows the same line for its extra: the one form, from a checkout.
FRAMEWORK_PAGES = {
    "docs/frameworks/openai-agents.md": "openai-agents",
    "docs/frameworks/pydantic-ai.md": "pydantic-ai",
    "docs/frameworks/llama-index.md": "llama-index",
    "docs/frameworks/smolagents.md": "smolagents",
    "docs/frameworks/google-adk.md": "google-adk",
    "docs/frameworks/strands.md": "strands",
    "docs/frameworks/crewai.md": "crewai",
    "docs/frameworks/haystack.md": "haystack",
    "docs/frameworks/dspy.md": "dspy",
    "docs/frameworks/agno.md": "agno",
    "docs/frameworks/agent-framework.md": "agent-framework",
    "docs/frameworks/semantic-kernel.md": "semantic-kernel",
    "docs/frameworks/claude-agent-sdk.md": "claude-agent-sdk",
}
# Where install lines are written for a reader: the docs, the README, CONTRIBUTING, and the
# package's own "needs the extra" messages.
WRITTEN = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "docs" / "examples").glob("*")),
    *sorted((ROOT / "symfonic_otel").rglob("*.py")),
]
_PIP_INSTALL = re.compile(r"pip install ([^`\n\"]*)")


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


@cache
def _requires(distribution: str) -> list[str] | None:
    """A distribution's requirements (None: not installed here), read once per run: every
    example's closure walks the same few hundred distributions."""
    try:
        return metadata.requires(distribution) or []
    except metadata.PackageNotFoundError:
        return None


@cache
def _providers() -> Mapping[str, list[str]]:
    """Which distributions provide each top-level module, from one scan of the environment."""
    return metadata.packages_distributions()


def installed_by(extra: str | None, extra_packages: tuple[str, ...] = ()) -> set[str]:
    """Distribution names a pip install of the package (with ``extra``) brings in."""
    wanted = [Requirement(r) for r in PROJECT["dependencies"]]
    if extra is not None:
        wanted += [Requirement(r) for r in PROJECT["optional-dependencies"][extra]]
    wanted += [Requirement(p) for p in extra_packages]
    seen: set[str] = set()
    while wanted:
        requirement = wanted.pop()
        name = _name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        requires = _requires(requirement.name)
        if requires is None:
            continue  # named but not installed here: its own requirements are not followed
        for text in requires:
            sub = Requirement(text)
            extras = requirement.extras or {""}
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in extras):
                wanted.append(sub)
    return seen


def missing_imports(example: str, available: set[str]) -> list[str]:
    """Top-level modules the example imports that no distribution in ``available`` provides."""
    tree = ast.parse((EXAMPLES / example).read_text())
    modules = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0)
        for alias in node.names
        if isinstance(node, ast.Import) or node.module
    }
    providers = _providers()
    missing = []
    for module in sorted(modules - set(sys.stdlib_module_names) - {"__future__", "symfonic_otel"}):
        if not {_name(d) for d in providers.get(module, [])} & available:
            missing.append(module)
    return missing


@pytest.mark.parametrize(
    ("page", "example", "line", "extra", "packages"), SHOWN, ids=lambda v: str(v)
)
def test_the_page_shows_an_install_line_that_brings_every_import(
    page: str, example: str, line: str, extra: str | None, packages: tuple[str, ...]
) -> None:
    text = (ROOT / page).read_text()
    assert line in text, f"{page} does not show {line!r}"
    code = (EXAMPLES / example).read_text().strip()
    assert example in text or code in text, f"{page} shows no {example}"  # by name, or verbatim
    assert missing_imports(example, installed_by(extra, packages)) == []


def package_targets(command: str) -> list[str]:
    """The arguments of one ``pip install ...`` that name this package rather than an index's."""
    command = re.split(r"#|&&|;|\||\)|\(| from ", command)[0]
    words = command.replace("'", " ").replace('"', " ").split()
    return [word for word in words if word.startswith((".", "/")) or "symfonic" in word]


def is_the_one_form(target: str) -> bool:
    """``-e .`` / ``-e '.[extra]'`` from a checkout, or the quick start's other-project path."""
    if target == "/path/to/symfonic-otel":
        return True
    match = re.fullmatch(r"\.(?:\[([a-z-]+(?:,[a-z-]+)*)\])?", target)
    if match is None:
        return False
    extras = (match.group(1) or "").split(",") if match.group(1) else []
    return all(extra in PROJECT["optional-dependencies"] for extra in extras)


def test_every_install_line_of_the_package_has_the_one_form() -> None:
    """The package is on no index: ``pip install 'symfonic-otel[x]'`` cannot work anywhere."""
    wrong = []
    for path in WRITTEN:
        text = path.read_text(encoding="utf-8")
        for match in _PIP_INSTALL.finditer(text):
            command = match.group(1)
            targets = package_targets(command)
            editable = "-e" in re.split(r"#|&&|;", command)[0].split()
            for target in targets:
                ok = is_the_one_form(target) and (target.startswith("/") or editable)
                if not ok:
                    wrong.append(f"{path.relative_to(ROOT)}: pip install {command.strip()}")
    assert wrong == []


@pytest.mark.parametrize(("page", "extra"), sorted(FRAMEWORK_PAGES.items()))
def test_each_framework_page_shows_the_one_line_for_its_extra(page: str, extra: str) -> None:
    text = (ROOT / page).read_text()
    assert f"pip install -e '.[{extra}]'    # from a checkout of this repository" in text
    assert extra in PROJECT["optional-dependencies"]


@pytest.mark.parametrize(
    "line",
    [
        "pip install 'symfonic-otel[smolagents]'",
        "pip install symfonic-otel",
        "pip install -e '.[smolagent]'",  # no such extra
        "pip install '.[smolagents]'",  # not the editable form the pages show
    ],
)
def test_the_form_check_rejects_a_line_that_cannot_work(line: str) -> None:
    command = line.removeprefix("pip install ")
    targets = package_targets(command)
    editable = "-e" in command.split()
    assert targets, line
    assert not all(is_the_one_form(t) and (t.startswith("/") or editable) for t in targets)


def test_the_check_catches_a_missing_extra() -> None:
    """The LangChain example after the bare install lacks langchain: the bug this prevents."""
    assert "langchain" in missing_imports("langchain_agent.py", installed_by(None))
    assert "pydantic_ai" in missing_imports("pydantic_ai_setup.py", installed_by("langchain"))


def test_the_instrument_extra_brings_the_distro() -> None:
    """``opentelemetry-instrument`` sets the SDK up only with a distro installed."""
    assert "opentelemetry-distro" in installed_by("instrument")
    assert "opentelemetry-distro" not in installed_by("langchain")
    shown = (EXAMPLES / "instrumentor.sh").read_text()
    assert "opentelemetry-instrument " in shown
    assert "opentelemetry-instrumentation" in installed_by(None)  # provides the command


def _fresh_venv_and_checkout(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """A new virtualenv (no system site packages), an environment that does not point Python at
    this checkout, and a copy of the checkout to install from."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    source = tmp_path / "checkout"
    ignored = (".git", ".venv", ".venvs", "site", "__pycache__", "*.egg-info")
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*ignored))
    return venv, env, source


def _install(command: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
    """Runs an install line; skipped where no package index answers (outside CI)."""
    install = run_text(command, env=env, cwd=cwd, timeout=1500)
    if install.returncode != 0 and not os.environ.get("CI"):
        pytest.skip(f"no package index reachable: {install.stderr[-300:]}")
    assert install.returncode == 0, install.stderr


@pytest.mark.timeout(1800)  # resolves and installs every dependency: minutes on a busy machine
def test_a_fresh_virtualenv_runs_the_langchain_example_after_its_install_line(
    tmp_path: Path,
) -> None:
    """The real thing: a new virtualenv, no system site packages, the README's line, the run."""
    venv, env, source = _fresh_venv_and_checkout(tmp_path)
    python = venv / "bin" / "python"
    _install(
        [str(python), "-m", "pip", "install", "-q", "--prefer-binary", f"{source}[langchain]"], env
    )
    run = run_ok(
        [str(python), str(EXAMPLES / "langchain_agent.py")],
        env=env,
        cwd=tmp_path,  # not the checkout: the installed package is what is imported
        timeout=300,
    )
    assert "It is sunny in Paris." in run.stdout
    # The installed wheel carries the runbooks its rules link to.
    run_ok(
        [str(venv / "bin" / "symfonic-otel"), "dashboards", "export", str(tmp_path / "ops")],
        env=env,
        cwd=tmp_path,
    )
    page = tmp_path / "ops" / "runbooks" / "SymfonicSilentBailBudgetBurn" / "README.md"
    assert page.read_text().startswith("# SymfonicSilentBailBudgetBurn")


@pytest.mark.timeout(1800)  # resolves and installs the extra: about 30 s from a local index
def test_a_fresh_virtualenv_imports_the_adapter_after_the_smolagents_pages_line(
    tmp_path: Path,
) -> None:
    """The framework page's own line, run as written in a copy of the checkout: a full install
    into a new virtualenv (no system site packages), then the adapter is imported and built."""
    page = (ROOT / "docs/frameworks/smolagents.md").read_text()
    line = next(row for row in page.splitlines() if row.startswith("pip install "))
    command = shlex.split(line.split("#")[0])
    assert command == ["pip", "install", "-e", ".[smolagents]"]
    venv, env, source = _fresh_venv_and_checkout(tmp_path)
    _install([str(venv / "bin" / command[0]), *command[1:], "-q", "--prefer-binary"], env, source)
    run = run_ok(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import symfonic_otel.smolagents as m, smolagents\n"
            "from symfonic_otel.smolagents import SymfonicSmolagents\n"
            "SymfonicSmolagents()\n"
            "print(m.__file__)",
        ],
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert run.stdout.strip().startswith(str(source))  # the checkout the line installed
