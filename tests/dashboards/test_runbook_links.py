"""Every runbook link of the exported rules resolves, in the exported folder and the docs site."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml  # type: ignore[import-untyped, unused-ignore]

from symfonic_otel import dashboards

ROOT = Path(__file__).resolve().parents[2]
BASE = "{{ with $externalLabels.runbook_base_url }}{{ . }}/{{ end }}"
RULE_FILES = ("prometheus/symfonic-rules.yml", "prometheus/symfonic-rules-unrecovered-page.yml")
SITE = "https://docs.example.com/symfonic-otel"


def _runbook_urls(folder: Path) -> dict[str, str]:
    urls = {}
    for name in RULE_FILES:
        for group in yaml.safe_load((folder / name).read_text())["groups"]:
            for rule in group["rules"]:
                if "alert" in rule:
                    urls[rule["alert"]] = rule["annotations"]["runbook_url"]
    return urls


def _render(template: str, base: str | None) -> str:
    """The one template the rules use: ``{{ with <label> }}{{ . }}/{{ end }}`` then a path."""
    assert template.startswith(BASE), template
    return (f"{base}/" if base else "") + template.removeprefix(BASE)


def test_every_exported_runbook_url_opens_the_alerts_runbook(tmp_path: Path) -> None:
    out = tmp_path / "ops"
    dashboards.export(out)
    urls = _runbook_urls(out)
    assert len(urls) >= 13
    for alert, template in urls.items():
        # Unset runbook_base_url: the relative link, against the exported folder.
        page = out / _render(template, None) / "README.md"
        assert page.is_file(), f"{alert}: {page} missing"
        assert page.read_text().splitlines()[0] == f"# {alert}"
        # runbook_base_url at the exported folder (file URL) or at the docs site: same path.
        assert _render(template, out.as_uri()) == f"{out.as_uri()}/runbooks/{alert}/"
        site_url = _render(template, SITE)
        docs_page = ROOT / "docs" / f"{site_url.removeprefix(SITE + '/').rstrip('/')}.md"
        assert docs_page.is_file(), f"{alert}: {site_url} is no page of the docs site"


def test_exported_runbooks_link_only_to_exported_files(tmp_path: Path) -> None:
    out = tmp_path / "ops"
    dashboards.export(out)
    pages = sorted((out / "runbooks").rglob("*.md"))
    assert len(pages) == len(list((ROOT / "docs" / "runbooks").glob("*.md")))
    checked = 0
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            assert "://" not in target, (page, target)
            path = (page.parent / target.split("#")[0]).resolve()
            assert path.is_file(), f"{page.relative_to(out)} links to missing {target}"
            checked += 1
    assert checked >= 13  # the index lists every page; pages link each other
    index = (out / "runbooks" / "README.md").read_text()
    assert "[SymfonicSilentBailBudgetBurn](SymfonicSilentBailBudgetBurn/README.md)" in index
    # A link to a docs page that is not exported stays readable, as text with its site path,
    # and no page sends the on-call to a repository file they do not have.
    burn = (out / "runbooks" / "SymfonicSilentBailBudgetBurn" / "README.md").read_text()
    assert "step caps (symfonic-otel documentation: step-caps/)" in burn
    for page in pages:
        text = page.read_text()
        assert "repository" not in text, page
        assert not re.search(r"`(docs|symfonic_otel|dashboards|tests)/", text), page


def test_shipped_comments_describe_the_links_the_rules_give() -> None:
    """No shipped file describes the old README.md#<alert> links or a runbook section."""
    for path in (ROOT / "dashboards").rglob("*"):
        if path.is_file() and path.suffix in {".yml", ".yaml", ".md"}:
            text = path.read_text()
            assert "README.md#" not in text, path
            assert "runbook section" not in text, path
    rules = (ROOT / "dashboards" / "prometheus" / "symfonic-rules.yml").read_text()
    assert "runbooks/<alert>/README.md" in rules


def _panel_titles() -> set[str]:
    titles: set[str] = set()
    for board_path in (ROOT / "dashboards").glob("*.json"):
        board = json.loads(board_path.read_text())
        for panel in board["panels"]:
            titles.add(panel["title"])
            titles.update(inner["title"] for inner in panel.get("panels", []))
    return titles


def test_every_panel_a_runbook_names_is_on_a_dashboard() -> None:
    """A runbook names panels in italics (``*Recovery ratio*``), by title or its beginning."""
    titles = _panel_titles()
    named = {
        (page.name, name)
        for page in (ROOT / "docs" / "runbooks").glob("*.md")
        for name in re.findall(r"(?<![*\w])\*([A-Z][^*\n]+)\*(?!\*)", page.read_text())
    }
    assert len(named) > 20
    missing = sorted(
        f"{page}: {name}" for page, name in named if not any(t.startswith(name) for t in titles)
    )
    assert not missing, missing
