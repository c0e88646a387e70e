"""Instrument factory: the synchronous instruments, built in one place from the names module.

The per-tenant counters are not SDK instruments: their totals live in ``tenant_counters`` (so
a tenant that leaves is forgotten) and ``tenant_hub`` hands them to the readers.
"""

from __future__ import annotations

from dataclasses import dataclass

from opentelemetry.metrics import Counter, Histogram, Meter, UpDownCounter

from symfonic_otel import semconv
from symfonic_otel.semconv import InstrumentSpec


def _counter(meter: Meter, spec: InstrumentSpec) -> Counter:
    return meter.create_counter(spec.name, unit=spec.unit, description=spec.description)


def _updown(meter: Meter, spec: InstrumentSpec) -> UpDownCounter:
    return meter.create_up_down_counter(spec.name, unit=spec.unit, description=spec.description)


def _histogram(meter: Meter, spec: InstrumentSpec) -> Histogram:
    # Every histogram spec has buckets (a spec without would get the SDK's default boundaries).
    advice = list(spec.buckets) if spec.buckets else None  # pragma: no mutate: all have buckets
    return meter.create_histogram(
        spec.name,
        unit=spec.unit,
        description=spec.description,
        explicit_bucket_boundaries_advisory=advice,
    )


@dataclass(frozen=True, slots=True)
class Instruments:
    agent_duration: Histogram
    active_runs: UpDownCounter
    react_iterations: Histogram
    operation_duration: Histogram
    token_usage: Histogram
    fabrication_confidence: Histogram
    orphaned_runs: Counter
    dropped_events: Counter
    time_to_first_chunk: Histogram
    tool_duration: Histogram
    inference_calls: Histogram
    tool_calls: Histogram

    @classmethod
    def create(cls, meter: Meter) -> Instruments:
        return cls(
            agent_duration=_histogram(meter, semconv.AGENT_DURATION),
            active_runs=_updown(meter, semconv.ACTIVE_RUNS),
            react_iterations=_histogram(meter, semconv.REACT_ITERATIONS),
            operation_duration=_histogram(meter, semconv.CLIENT_OPERATION_DURATION),
            token_usage=_histogram(meter, semconv.CLIENT_TOKEN_USAGE),
            fabrication_confidence=_histogram(meter, semconv.FABRICATION_CONFIDENCE),
            orphaned_runs=_counter(meter, semconv.ORPHANED_RUNS),
            dropped_events=_counter(meter, semconv.DROPPED_EVENTS),
            time_to_first_chunk=_histogram(meter, semconv.CLIENT_TIME_TO_FIRST_CHUNK),
            tool_duration=_histogram(meter, semconv.EXECUTE_TOOL_DURATION),
            inference_calls=_histogram(meter, semconv.INVOKE_AGENT_INFERENCE_CALLS),
            tool_calls=_histogram(meter, semconv.INVOKE_AGENT_TOOL_CALLS),
        )
