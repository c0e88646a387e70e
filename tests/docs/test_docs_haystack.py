"""The Haystack page's code is its example files, and the examples do what they say
(run in the ``haystack`` environment that ``.ci/framework-envs`` builds)."""

from __future__ import annotations

from tests.support.framework_docs_support import FrameworkPageChecks


class TestHaystackPage(FrameworkPageChecks):
    page, module = "haystack.md", "haystack"
    setup, bail = "haystack_setup.py", "haystack_bail.py"
    reason = "needs the haystack extra (.ci/framework-envs)"
