"""OpenAI Agents SDK adapter: ``SymfonicTracingProcessor``, one of the SDK's tracing processors.

``processor`` (the SDK callbacks -> the invocation layer's run model), ``steps`` (model calls,
tools, handoffs, guardrails, what only the SDK records about a run), ``read`` (span-data
readers). Needs the ``openai-agents`` extra; the core package never imports this.
"""

from __future__ import annotations

try:
    import agents as _agents  # noqa: F401  (fail here, with the extra's name, not deeper)
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without the SDK
    raise ImportError(
        "symfonic_otel.openai_agents needs the OpenAI Agents SDK: "
        "pip install -e '.[openai-agents]' from a checkout of symfonic-otel"
    ) from exc

from symfonic_otel.openai_agents.processor import SymfonicTracingProcessor

__all__ = ["SymfonicTracingProcessor"]
