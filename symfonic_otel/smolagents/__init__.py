"""smolagents adapter: ``SymfonicSmolagents``, step callbacks that record each agent run.

``callbacks`` (the step callbacks -> the invocation layer), ``steps`` (a memory step, read by
structure). Needs the ``smolagents`` extra; the core package never imports this.
"""

from __future__ import annotations

from symfonic_otel.invocation.extras import require

require(
    "smolagents",
    __name__,
    "smolagents",
    "pip install -e '.[smolagents]' from a checkout of symfonic-otel",
)

from symfonic_otel.smolagents.callbacks import SymfonicSmolagents  # noqa: E402  (after the check)

__all__ = ["SymfonicSmolagents"]
