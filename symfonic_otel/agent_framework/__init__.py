"""Microsoft Agent Framework adapter: ``SymfonicAgentFramework``, agent, chat and function
middleware recording runs, model calls, tools and the forced final answer.

``middleware`` (the three middleware -> the core handler), ``read`` (a chat response's shape
and usage). Needs the ``agent-framework`` extra; the core package never imports this.
"""

from __future__ import annotations

try:
    import agent_framework as _agent_framework  # noqa: F401  (fail here, with the extra's name)
except ImportError as exc:  # pragma: no cover - exercised in an environment without it
    raise ImportError(
        "symfonic_otel.agent_framework needs Microsoft Agent Framework: "
        "pip install -e '.[agent-framework]' from a checkout of symfonic-otel"
    ) from exc

from symfonic_otel.agent_framework.middleware import SymfonicAgentFramework

__all__ = ["SymfonicAgentFramework"]
