"""The Strands Agents page's code is its example files, and the examples do what they say
(run in the ``strands`` environment that ``.ci/framework-envs`` builds)."""

from __future__ import annotations

from tests.support.framework_docs_support import FrameworkPageChecks


class TestStrandsPage(FrameworkPageChecks):
    page, module = "strands.md", "strands"
    setup, bail = "strands_setup.py", "strands_bail.py"
    reason = "needs the strands extra (.ci/framework-envs)"
