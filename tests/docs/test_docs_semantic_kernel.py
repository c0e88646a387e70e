"""The Semantic Kernel page's code is its example files, and the examples do what they say
(run in the ``semantic-kernel`` environment that ``.ci/framework-envs`` builds)."""

from __future__ import annotations

from tests.support.framework_docs_support import FrameworkPageChecks


class TestSemanticKernelPage(FrameworkPageChecks):
    page, module = "semantic-kernel.md", "semantic_kernel"
    setup, bail = "semantic_kernel_setup.py", "semantic_kernel_bail.py"
    reason = "needs the semantic-kernel extra"
