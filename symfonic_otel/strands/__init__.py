"""Strands Agents adapter: ``SymfonicHooks``, a hook provider for ``Agent(hooks=[...])``.

``hooks`` (the invocation, model and tool events -> the core handler), ``read`` (a message's
shape and usage). Needs the ``strands`` extra; the core package never imports this.
"""

from __future__ import annotations

try:
    import strands as _strands  # noqa: F401  (fail here, with the extra's name)
except ImportError as exc:  # pragma: no cover - exercised in an environment without it
    raise ImportError(
        "symfonic_otel.strands needs Strands Agents: "
        "pip install -e '.[strands]' from a checkout of symfonic-otel"
    ) from exc

from symfonic_otel.strands.hooks import SymfonicHooks

__all__ = ["SymfonicHooks"]
