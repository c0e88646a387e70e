"""Haystack adapter: ``SymfonicTracer``, a ``haystack.tracing`` tracer recording Agent runs.

``tracer`` (the Agent's run, model-call and tool spans -> the invocation layer), ``read`` (a chat
message's shape, usage and the Agent's result). Needs the ``haystack`` extra; the core package
never imports this.
"""

from __future__ import annotations

from symfonic_otel.invocation.extras import require

require(
    "haystack",
    __name__,
    "Haystack",
    "pip install -e '.[haystack]' from a checkout of symfonic-otel",
)

from symfonic_otel.haystack.tracer import SymfonicTracer  # noqa: E402  (after the check)

__all__ = ["SymfonicTracer"]
