"""The Google ADK page's code is its example files, and the examples do what they say
(run in the ``google-adk`` environment that ``.ci/framework-envs`` builds)."""

from __future__ import annotations

from tests.support.framework_docs_support import FrameworkPageChecks


class TestGoogleAdkPage(FrameworkPageChecks):
    page, module = "google-adk.md", "google.adk"
    setup, bail = "google_adk_setup.py", "google_adk_bail.py"
    reason = "needs the google-adk extra (.ci/framework-envs)"
