"""Semantic Kernel adapter: ``SymfonicFilters``, a kernel's function and auto function filters.

``filters`` (prompt-function invocations, the auto function invocation loop, tools -> the core
handler), ``read`` (a chat message's shape, usage and the request's attempt cap). Needs the
``semantic-kernel`` extra; the core package never imports this.
"""

from __future__ import annotations

from symfonic_otel.invocation.extras import require

require(
    "semantic_kernel",
    __name__,
    "Semantic Kernel",
    "pip install -e '.[semantic-kernel]' from a checkout of symfonic-otel",
)

from symfonic_otel.semantic_kernel.filters import SymfonicFilters  # noqa: E402  (after the check)

__all__ = ["SymfonicFilters"]
