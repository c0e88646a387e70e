"""The Microsoft Agent Framework page's code is its example files, and the examples do what
they say."""

from __future__ import annotations

from tests.support.framework_docs_support import FrameworkPageChecks


class TestAgentFrameworkPage(FrameworkPageChecks):
    page, module = "agent-framework.md", "agent_framework"
    setup, bail = "agent_framework_setup.py", "agent_framework_bail.py"
    reason = "needs the agent-framework extra"
