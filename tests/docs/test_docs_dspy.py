"""The DSPy page's code is its example files, and the examples do what they say
(run in the ``dspy`` environment that ``.ci/framework-envs`` builds)."""

from __future__ import annotations

from tests.support.framework_docs_support import FrameworkPageChecks


class TestDspyPage(FrameworkPageChecks):
    page, module = "dspy.md", "dspy"
    setup, bail = "dspy_setup.py", "dspy_bail.py"
    reason = "needs the dspy extra (.ci/framework-envs)"
