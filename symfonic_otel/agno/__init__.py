"""Agno adapter: ``SymfonicAgno``, the run, model and tool hooks of an Agno agent.

``hooks`` (pre/post hooks, the tool hook, the model's error boundary -> the core handler),
``read`` (an Agno message's shape and usage). Needs the ``agno`` extra; the core package never
imports this.
"""

from __future__ import annotations

try:
    import agno.agent as _agno_agent  # noqa: F401  (fail here, with the extra's name)
except ImportError as exc:  # pragma: no cover - exercised in an environment without it
    raise ImportError(
        "symfonic_otel.agno needs Agno: pip install -e '.[agno]' from a checkout of symfonic-otel"
    ) from exc

from symfonic_otel.agno.hooks import SymfonicAgno

__all__ = ["SymfonicAgno"]
