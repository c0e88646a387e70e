"""The Agno page's code is its example files, and the examples do what they say."""

from __future__ import annotations

from tests.support.framework_docs_support import FrameworkPageChecks


class TestAgnoPage(FrameworkPageChecks):
    page, module = "agno.md", "agno"
    setup, bail = "agno_setup.py", "agno_bail.py"
    reason = "needs the agno extra"
