"""The step-cap page: its example runs and says what it claims, and the page shows that code."""

from __future__ import annotations

import runpy
import warnings
from pathlib import Path

from tests.support.step_cap_support import CAPS

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGE = DOCS / "step-caps.md"
EXAMPLE = DOCS / "examples" / "step_caps.py"


def test_example_records_the_capped_run_as_a_silent_bail() -> None:
    # LangChain 1.x's create_agent, not LangGraph's deprecated create_react_agent: the example
    # runs with deprecation warnings as errors.
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        main = runpy.run_path(str(EXAMPLE))["main"]
        summary = main()
    assert summary == {
        "outcome": "completed",
        "stop_reason": "recursion_limit",
        "empty": True,
        "silent_bails": 1.0,
    }


def test_page_shows_the_example_as_it_is_run() -> None:
    assert f"```python\n{EXAMPLE.read_text()}```" in PAGE.read_text()


def test_page_table_names_every_tested_cap() -> None:
    """Each agent constructor with a budget the tests cover has its row."""
    page = PAGE.read_text()
    names = {
        "prebuilt_remaining_steps": "`langgraph.prebuilt.create_react_agent`, even",
        "create_agent_model_call_limit": "`create_agent` with `ModelCallLimitMiddleware`",
        "create_agent_tool_call_limit": "`create_agent` with `ToolCallLimitMiddleware(exit_beh",
    }
    assert {cap.name for cap in CAPS} == set(names)
    for cap in CAPS:
        assert f"| {names[cap.name]}" in page, cap.name


def _step_cap_table() -> str:
    from symfonic_otel.read.step_caps import STEP_CAP_ERROR_TYPES

    rows = [
        "| framework | error type (`error.type` / `exception.type`, last dotted part) "
        "| raised when |",
        "|---|---|---|",
        *(f"| {e.framework} | `{e.name}` | {e.raised_when} |" for e in STEP_CAP_ERROR_TYPES),
    ]
    return "<!-- step-cap-errors:start -->\n" + "\n".join(rows) + "\n<!-- step-cap-errors:end -->"


def test_both_pages_show_the_one_list_of_step_cap_errors_from_the_code() -> None:
    """``docs/step-caps.md`` and the span-processor page render ``read.step_caps``' list: an
    entry added to the code without its docs row (or the reverse) fails here."""
    table = _step_cap_table()
    for page in (PAGE, DOCS / "frameworks" / "span-processor.md"):
        assert table in page.read_text(), page.name


def test_every_listed_step_cap_error_is_the_frameworks_class() -> None:
    """Each entry names a class its framework defines where the list says (the LangChain
    handler looks it up there)."""
    import importlib

    from symfonic_otel.read.step_caps import STEP_CAP_ERROR_TYPES

    for entry in STEP_CAP_ERROR_TYPES:
        found = getattr(importlib.import_module(entry.module), entry.name)
        assert isinstance(found, type) and issubclass(found, BaseException), entry
