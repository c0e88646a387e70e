"""The tenancy page: its example runs, and its budget table is the package's arithmetic."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

from symfonic_otel.emit.budget import series_budget

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_tenancy_example_runs_and_is_the_one_shown() -> None:
    example = DOCS / "examples" / "tenancy.py"
    runpy.run_path(str(example), run_name="__main__")  # it asserts what it shows
    assert example.read_text(encoding="utf-8") in (DOCS / "tenancy.md").read_text(encoding="utf-8")


def test_the_budget_table_matches_series_budget() -> None:
    text = (DOCS / "tenancy.md").read_text(encoding="utf-8")
    section = text.split("## Series budget")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    budget = series_budget(10_000)
    shown = {}
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        shown[cells[0].strip("`")] = int(re.sub(r"[^0-9]", "", cells[-1]))
    assert shown
    for name, count in shown.items():
        assert budget[name] == count, name
