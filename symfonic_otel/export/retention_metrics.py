"""Outcome retention's counters, read from the processor at each collection.

Observable instruments cost nothing on the span path; every decision and drop reason is
reported from the start, at zero too, so ``rate()`` sees the first one. The processor is held
weakly: a meter provider never keeps a retired processor alive.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Protocol

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from symfonic_otel import semconv
from symfonic_otel._version import __version__

__all__ = ["observe_retention"]


class Counted(Protocol):
    """What the counters read of an ``OutcomeRetentionSpanProcessor``."""

    @property
    def dropped_spans(self) -> dict[str, int]: ...

    @property
    def late_keeps(self) -> int: ...

    @property
    def held_spans(self) -> int: ...

    def decision_counts(self) -> dict[tuple[str, str], int]: ...


def observe_retention(processor: Counted, meter_provider: MeterProvider | None) -> None:
    """Register the retention counters of ``processor`` with ``meter_provider`` (or the global)."""
    meter = metrics.get_meter(semconv.SCOPE_NAME, __version__, meter_provider=meter_provider)
    ref = weakref.ref(processor)

    def traces(options: CallbackOptions) -> Iterable[Observation]:
        held = ref()
        counts = held.decision_counts() if held is not None else {}
        return [
            Observation(count, {semconv.RETENTION_DECISION: kept, semconv.RETENTION_BASIS: by})
            for (kept, by), count in counts.items()
        ]

    def dropped(options: CallbackOptions) -> Iterable[Observation]:
        held = ref()
        drops = held.dropped_spans if held is not None else {}
        return [
            Observation(count, {semconv.TELEMETRY_DROP_REASON: reason})
            for reason, count in drops.items()
        ]

    def late(options: CallbackOptions) -> Iterable[Observation]:
        held = ref()
        return [Observation(held.late_keeps)] if held is not None else []

    def spans(options: CallbackOptions) -> Iterable[Observation]:
        held = ref()
        return [Observation(held.held_spans)] if held is not None else []

    for spec, callback in (
        (semconv.RETENTION_TRACES, traces),
        (semconv.RETENTION_DROPPED_SPANS, dropped),
        (semconv.RETENTION_LATE_KEEPS, late),
    ):
        meter.create_observable_counter(
            spec.name, callbacks=[callback], unit=spec.unit, description=spec.description
        )
    spec = semconv.RETENTION_HELD_SPANS
    meter.create_observable_up_down_counter(
        spec.name, callbacks=[spans], unit=spec.unit, description=spec.description
    )
