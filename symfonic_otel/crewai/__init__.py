"""CrewAI adapter: ``SymfonicListener``, a listener on CrewAI's event bus.

``listener`` (agent executions, LLM calls, tool usages -> the invocation layer's run model),
``read`` (the executor's iteration count, a response's shape, usage). Needs the ``crewai``
extra; the core package never imports this.
"""

from __future__ import annotations

from symfonic_otel.invocation.extras import require

require(
    "crewai",
    __name__,
    "CrewAI",
    "pip install -e '.[crewai]' from a checkout of symfonic-otel",
)

from symfonic_otel.crewai.listener import SymfonicListener  # noqa: E402  (after the check)

__all__ = ["SymfonicListener"]
