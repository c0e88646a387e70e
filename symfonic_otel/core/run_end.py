"""The AgentEnd an adapter hands the core when it knows more than Symfonic's event carries."""

from __future__ import annotations

from dataclasses import dataclass

from symfonic_otel.events import TerminationOutcome


@dataclass(frozen=True, slots=True)
class AdapterRunEnd:
    """A run's end as an adapter reads it from its framework: the duration may be unknown
    (``None``: the core measures it from the run's start), and the stop reason and error type
    are the adapter's verdict, read by the core like Symfonic's own fields."""

    run_id: str
    outcome: TerminationOutcome
    final_response: str | None = None
    duration_ms: float | None = None
    node_count: int | None = None
    stop_reason: str | None = None
    error_type: str | None = None
