"""Semantic Kernel adapter: ``SymfonicFilters``, a kernel's function and auto function filters.

``filters`` (prompt-function invocations, the auto function invocation loop, tools -> the core
handler), ``read`` (a chat message's shape, usage and the request's attempt cap). Needs the
``semantic-kernel`` extra; the core package never imports this.
"""

from __future__ import annotations

try:
    import semantic_kernel as _semantic_kernel  # noqa: F401  (fail here, with the extra's name)
except ImportError as exc:  # pragma: no cover - exercised in an environment without it
    raise ImportError(
        "symfonic_otel.semantic_kernel needs Semantic Kernel: "
        "pip install -e '.[semantic-kernel]' from a checkout of symfonic-otel"
    ) from exc

from symfonic_otel.semantic_kernel.filters import SymfonicFilters

__all__ = ["SymfonicFilters"]
