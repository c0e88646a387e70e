"""Pydantic AI adapter: ``SymfonicCapability``, a capability for ``Agent(capabilities=[...])``.

``capability`` (the run, model and tool hooks -> the invocation layer's run model),
``verdicts`` (how a run ended, a response's shape). Needs the ``pydantic-ai`` extra; the core
package never imports this.
"""

from __future__ import annotations

try:
    import pydantic_ai as _pydantic_ai  # noqa: F401  (fail here, with the extra's name)
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without it
    raise ImportError(
        "symfonic_otel.pydantic_ai needs Pydantic AI: "
        "pip install -e '.[pydantic-ai]' from a checkout of symfonic-otel"
    ) from exc

from symfonic_otel.pydantic_ai.capability import SymfonicCapability

__all__ = ["SymfonicCapability"]
