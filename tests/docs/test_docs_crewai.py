"""The CrewAI page's code is its example files, and the examples do what they say
(run in the ``crewai`` environment that ``.ci/framework-envs`` builds)."""

from __future__ import annotations

from tests.support.framework_docs_support import FrameworkPageChecks


class TestCrewaiPage(FrameworkPageChecks):
    page, module = "crewai.md", "crewai"
    setup, bail = "crewai_setup.py", "crewai_bail.py"
    reason = "needs the crewai extra (.ci/framework-envs)"
