"""The Claude Agent SDK page's code is its example files, and the examples do what they say
(the SDK installs beside the test extra)."""

from __future__ import annotations

from tests.support.framework_docs_support import FrameworkPageChecks


class TestClaudeAgentSdkPage(FrameworkPageChecks):
    page, module = "claude-agent-sdk.md", "claude_agent_sdk"
    setup, bail = "claude_agent_sdk_setup.py", "claude_agent_sdk_bail.py"
    reason = "needs the claude-agent-sdk extra"
