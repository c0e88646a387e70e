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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
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
