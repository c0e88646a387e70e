"""The invocation layer: one run model under every framework adapter.

An adapter translates its framework's hooks into facts (a run started, a model turn of some
shape, a tool ran or failed, the run ended one of a few ways) and hands them to ``RunBook``,
which owns the open runs and their bound (``runs``), the guard (``guard``), turn shapes
(``turns``), tool spans (``tools``), model calls and the synthesis fallback (``calls``), the
verdict (``verdicts``) and loop tracking's hook-up (``loops``); ``tenants`` reads a run's
tenant from its metadata, ``extras`` checks an adapter's framework is installed, ``adapter`` is
the base that shows an adapter's handler and open runs. Adapters hold no run bookkeeping of
their own.
"""

from __future__ import annotations

from symfonic_otel.invocation.book import RunBook
from symfonic_otel.invocation.calls import token_counts
from symfonic_otel.invocation.guard import Guard
from symfonic_otel.invocation.loops import loop_handler, positive
from symfonic_otel.invocation.runs import FrameworkRun, RunIndex
from symfonic_otel.invocation.tenants import tenant_in
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
    "token_counts",
]
