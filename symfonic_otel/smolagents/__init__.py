"""smolagents adapter: ``SymfonicSmolagents``, step callbacks that record each agent run.

``callbacks`` (the step callbacks -> the core handler), ``steps`` (a memory step, read by
structure). Needs the ``smolagents`` extra; the core package never imports this.
"""

from __future__ import annotations

try:
    import smolagents as _smolagents  # type: ignore[import-untyped]  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without it
    raise ImportError(
        "symfonic_otel.smolagents needs smolagents: "
        "pip install -e '.[smolagents]' from a checkout of symfonic-otel"
    ) from exc

from symfonic_otel.smolagents.callbacks import SymfonicSmolagents

__all__ = ["SymfonicSmolagents"]
