"""Haystack adapter: ``SymfonicTracer``, a ``haystack.tracing`` tracer recording Agent runs.

``tracer`` (the Agent's run, model-call and tool spans -> the core handler), ``read`` (a chat
message's shape, usage and the Agent's result). Needs the ``haystack`` extra; the core package
never imports this.
"""

from __future__ import annotations

try:
    import haystack as _haystack  # noqa: F401  (fail here, with the extra's name)
except ImportError as exc:  # pragma: no cover - exercised in an environment without it
    raise ImportError(
        "symfonic_otel.haystack needs Haystack: "
        "pip install -e '.[haystack]' from a checkout of symfonic-otel"
    ) from exc

from symfonic_otel.haystack.tracer import SymfonicTracer

__all__ = ["SymfonicTracer"]
