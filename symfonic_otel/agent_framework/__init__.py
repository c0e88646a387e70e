"""Microsoft Agent Framework adapter: ``SymfonicAgentFramework``, agent, chat and function
middleware recording runs, model calls, tools and the forced final answer.

``middleware`` (the three middleware -> the invocation layer), ``read`` (a chat response's shape
and usage). Needs the ``agent-framework`` extra; the core package never imports this.
"""

from __future__ import annotations

from symfonic_otel.invocation.extras import require

require(
    "agent_framework",
    __name__,
    "Microsoft Agent Framework",
    "pip install -e '.[agent-framework]' from a checkout of symfonic-otel",
)

from symfonic_otel.agent_framework.middleware import SymfonicAgentFramework  # noqa: E402  (after the check)

__all__ = ["SymfonicAgentFramework"]
