"""OpenAI Agents SDK adapter: ``SymfonicTracingProcessor``, one of the SDK's tracing processors.

``processor`` (the SDK callbacks -> the invocation layer's run model), ``steps`` (model calls,
tools, handoffs, guardrails, what only the SDK records about a run), ``read`` (span-data
readers). Needs the ``openai-agents`` extra; the core package never imports this.
"""

from __future__ import annotations

from symfonic_otel.invocation.extras import require

require(
    "agents",
    __name__,
    "the OpenAI Agents SDK",
    "pip install -e '.[openai-agents]' from a checkout of symfonic-otel",
)

from symfonic_otel.openai_agents.processor import SymfonicTracingProcessor  # noqa: E402  (after the check)

__all__ = ["SymfonicTracingProcessor"]
