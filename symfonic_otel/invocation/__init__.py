"""The invocation layer: one run model under every framework adapter.

An adapter translates its framework's hooks into facts (a run started, a model turn of some
shape, a tool ran or failed, the run ended one of a few ways) and hands them to ``RunBook``,
which owns the open runs and their bound (``runs``), the guard (``guard``), turn shapes
(``turns``), tool spans (``tools``), model calls and the synthesis fallback (``calls``), the
verdict (``verdicts``) and loop tracking's hook-up (``loops``). Adapters hold no run
bookkeeping of their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from symfonic_otel.invocation.book import RunBook
from symfonic_otel.invocation.guard import Guard
from symfonic_otel.invocation.loops import loop_handler, positive
from symfonic_otel.invocation.runs import FrameworkRun, RunIndex
from symfonic_otel.invocation.turns import Turn, answered, bail_event, captured, shape_bail
from symfonic_otel.invocation.verdicts import END_TURN, Ending

__all__ = [
    "END_TURN",
    "Ending",
    "FrameworkRun",
    "Guard",
    "RunBook",
    "RunIndex",
    "Turn",
    "answered",
    "bail_event",
    "captured",
    "loop_handler",
    "positive",
    "shape_bail",
    "tenant_in",
]

_TENANT_KEY: Final = "tenant_id"


def tenant_in(metadata: object) -> str | None:
    """The ``tenant_id`` of a framework's run metadata or state mapping, if it names one."""
    value = metadata.get(_TENANT_KEY) if isinstance(metadata, Mapping) else None
    return value if isinstance(value, str) and value else None
