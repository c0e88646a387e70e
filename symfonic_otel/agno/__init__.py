"""Agno adapter: ``SymfonicAgno``, the run, model and tool hooks of an Agno agent.

``hooks`` (pre/post hooks, the tool hook, the model's error boundary -> the invocation layer),
``read`` (an Agno message's shape and usage). Needs the ``agno`` extra; the core package never
imports this.
"""

from __future__ import annotations

from symfonic_otel.invocation.extras import require

require(
    "agno.agent",
    __name__,
    "Agno",
    "pip install -e '.[agno]' from a checkout of symfonic-otel",
)

from symfonic_otel.agno.hooks import SymfonicAgno  # noqa: E402  (after the check)

__all__ = ["SymfonicAgno"]
