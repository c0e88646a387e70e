"""Pydantic AI adapter: ``SymfonicCapability``, a capability for ``Agent(capabilities=[...])``.

``capability`` (the run, model and tool hooks -> the invocation layer's run model),
``verdicts`` (how a run ended, a response's shape). Needs the ``pydantic-ai`` extra; the core
package never imports this.
"""

from __future__ import annotations

from symfonic_otel.invocation.extras import require

require(
    "pydantic_ai",
    __name__,
    "Pydantic AI",
    "pip install -e '.[pydantic-ai]' from a checkout of symfonic-otel",
)

from symfonic_otel.pydantic_ai.capability import SymfonicCapability  # noqa: E402  (after the check)

__all__ = ["SymfonicCapability"]
