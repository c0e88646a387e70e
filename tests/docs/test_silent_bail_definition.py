"""One meaning of "silent bail", from the metric's help text to the page's runbook."""

from __future__ import annotations

import json
from pathlib import Path

import yaml  # type: ignore[import-untyped, unused-ignore]

from symfonic_otel import semconv
from symfonic_otel.events import ReactLoopEndEvent

ROOT = Path(__file__).resolve().parents[2]
STOPPED = "stopped without writing an answer"
FALLBACK = "whether or not a fallback then produced one"
OLD = ("ended with an empty final response", "produced no text", "ended with no text")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _panel_descriptions(panels: list[dict[str, object]]) -> list[str]:
    found = []
    for panel in panels:
        found.append(str(panel.get("description", "")))
        found.extend(_panel_descriptions(panel.get("panels", [])))  # type: ignore[arg-type]
    return found


def test_every_place_that_defines_a_silent_bail_says_the_same() -> None:
    board = json.loads((ROOT / "dashboards" / "symfonic-agent-overview.json").read_text())
    rules = yaml.safe_load((ROOT / "dashboards" / "prometheus" / "symfonic-rules.yml").read_text())
    page = next(
        rule
        for group in rules["groups"]
        for rule in group["rules"]
        if rule.get("alert") == "SymfonicSilentBailBudgetBurn"
    )
    places = {
        "metric help text": semconv.SILENT_BAILS.description,
        "event docstring": ReactLoopEndEvent.__doc__ or "",
        "metrics reference": (ROOT / "docs" / "reference" / "metrics.md").read_text(),
        "trace reference": (ROOT / "docs" / "reference" / "trace.md").read_text(),
        "dashboard panel": " ".join(_panel_descriptions(board["panels"])),
        "page's description": page["annotations"]["description"],
        "page's runbook": (
            ROOT / "docs" / "runbooks" / "SymfonicSilentBailBudgetBurn.md"
        ).read_text(),
        "SLO page": (ROOT / "docs" / "operators" / "slo.md").read_text(),
    }
    for where, text in places.items():
        flat = _flat(text)
        assert STOPPED in flat and FALLBACK in flat, where
        assert not any(old in flat for old in OLD), where


def test_the_pages_runbook_says_what_the_fallback_changes_and_gives_fixes_per_way_in() -> None:
    text = _flat((ROOT / "docs" / "runbooks" / "SymfonicSilentBailBudgetBurn.md").read_text())
    changes = text.split("**What a fallback changes, and what it does not.**")[1]
    changes = changes.split("**First checks.**")[0]
    assert "the **user's answer**" in changes and "the **cost**" in changes
    assert "does **not** change this page" in text
    fixes = text.split("**Fixes, by way in.**")[1]
    for way in (
        "Bundled loop",
        "LangChain / LangGraph",
        "OpenAI Agents SDK",
        "Pydantic AI",
        "Other frameworks",
    ):
        assert f"**{way}" in fixes, way
    assert "SymfonicUnrecoveredBailBudgetBurn.md" in text
