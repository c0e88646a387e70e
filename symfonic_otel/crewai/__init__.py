"""CrewAI adapter: ``SymfonicListener``, a listener on CrewAI's event bus.

``listener`` (agent executions, LLM calls, tool usages -> the core handler), ``read`` (per-run
state, the executor's iteration count). Needs the ``crewai`` extra; the core package never
imports this.
"""

from __future__ import annotations

try:
    import crewai as _crewai  # noqa: F401  (fail here, with the extra's name)
except ImportError as exc:  # pragma: no cover - exercised in an environment without it
    raise ImportError(
        "symfonic_otel.crewai needs CrewAI: "
        "pip install -e '.[crewai]' from a checkout of symfonic-otel"
    ) from exc

from symfonic_otel.crewai.listener import SymfonicListener

__all__ = ["SymfonicListener"]
