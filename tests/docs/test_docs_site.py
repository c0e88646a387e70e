"""The documentation site builds strictly, and every alert's runbook_url lands on a page of it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "dashboards" / "prometheus" / "symfonic-rules.yml"
VARIANT = ROOT / "dashboards" / "prometheus" / "symfonic-rules-unrecovered-page.yml"
BASE = "{{ with $externalLabels.runbook_base_url }}{{ . }}/{{ end }}"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
        check=False,
    )
    # --strict: a broken link, a missing anchor or page, or a failed include is an error.
    assert done.returncode == 0, done.stderr
    return out


def test_every_runbook_url_is_a_page_of_the_built_site(site: Path) -> None:
    urls = [
        rule["annotations"]["runbook_url"]
        for path in (RULES, VARIANT)
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    ]
    assert urls
    for url in urls:
        assert url.startswith(BASE), url
        page = site / url.removeprefix(BASE) / "index.html"
        assert page.is_file(), url
        name = url.removeprefix(BASE).split("/")[1]
        assert re.search(rf"<h1[^>]*>{name}", page.read_text()), name


def test_api_reference_is_generated_from_the_docstrings(site: Path) -> None:
    html = (site / "reference" / "api" / "index.html").read_text()
    # Rendered from the docstrings, not written by hand on the page.
    assert "OTelCallbackHandler" in html and "configure_telemetry" in html
    assert "Build SDK tracer and meter providers" in html
    # Headings are the names users import, not the internal module paths.
    for public in ("symfonic_otel.configure_telemetry", "symfonic_otel.OTelCallbackHandler"):
        assert re.search(rf'<h3 id="{re.escape(public)}"', html), public
    assert 'id="symfonic_otel.export.setup.configure_telemetry"' not in html
