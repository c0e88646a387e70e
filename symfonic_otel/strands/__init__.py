"""Strands Agents adapter: ``SymfonicHooks``, a hook provider for ``Agent(hooks=[...])``.

``hooks`` (the invocation, model and tool events -> the invocation layer), ``read`` (a message's
shape and usage). Needs the ``strands`` extra; the core package never imports this.
"""

from __future__ import annotations

from symfonic_otel.invocation.extras import require

require(
    "strands",
    __name__,
    "Strands Agents",
    "pip install -e '.[strands]' from a checkout of symfonic-otel",
)

from symfonic_otel.strands.hooks import SymfonicHooks  # noqa: E402  (after the check)

__all__ = ["SymfonicHooks"]
