"""What outcome retention reads on a span: whether its run must be kept, and what it weighs.

A run is kept whole when any of its spans shows that it bailed (a termination reason or an
empty answer), errored (``symfonic.run.outcome=error``, or ERROR status on the run span or the
local root), was cancelled or abandoned, fell back to synthesis (a ``react_synthesize_fallback``
span), looped (the ``symfonic.agent.loop_detected`` event, a
``loop_detected`` stop) or had a fabrication detection. Everything here reads the span's
structure; no text is ever interpreted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased
from opentelemetry.trace import StatusCode

from symfonic_otel import semconv
from symfonic_otel.environment import read_number
from symfonic_otel.read.sanitise import is_real

DEFAULT_HEALTHY_TRACE_RATIO: Final = 1.0
_KEPT_OUTCOMES: Final = frozenset({"error", "cancelled", "abandoned"})
_KEPT_STOPS: Final = frozenset(
    {
        semconv.STOP_REASON_LOOP_DETECTED,
        semconv.STOP_REASON_RECURSION_LIMIT,
        semconv.STOP_REASON_ERROR,
        semconv.STOP_REASON_INTERRUPTED,
    }
)
_OUTCOME_KEYS: Final = frozenset(
    {
        semconv.RUN_OUTCOME,
        semconv.REACT_TERMINATION_REASON,
        semconv.RUN_STOP_REASON,
        semconv.RESPONSE_EMPTY,
        semconv.SYNTHESIS_RECOVERED,
    }
)
_KEPT_NODES: Final = frozenset({semconv.NODE_SYNTHESIZE_FALLBACK})
_KEPT_EVENTS: Final = frozenset({semconv.EVENT_FABRICATION_DETECTED, semconv.EVENT_LOOP_DETECTED})
# What a held span weighs beyond its attribute and event text, measured with tracemalloc on the
# reference loop's spans (benchmarks/retention.py): the span object, its context, status,
# attribute mapping and bookkeeping.
SPAN_OVERHEAD_BYTES: Final = 2_000
_ITEM_OVERHEAD_BYTES: Final = 100
_EVENT_OVERHEAD_BYTES: Final = 400


def check_ratio(value: object, option: str = "healthy_trace_ratio") -> float:
    """``value`` as a ratio in [0, 1]; a ``ValueError`` naming ``option`` otherwise."""
    if not is_real(value) or not 0.0 <= value <= 1.0:
        raise ValueError(
            f"{option} must be a number from 0.0 to 1.0 (the share of healthy runs' traces "
            f"exported; 1.0 keeps every trace), got {value!r}"
        )
    return float(value)


def ratio_from_env(explicit: float | None) -> float:
    """The explicit ratio if given, else ``SYMFONIC_OTEL_HEALTHY_TRACE_RATIO``, else 1.0.

    A bad variable never stops the application: the package's one policy for telemetry
    variables warns (variable and value) and the default applies.
    """
    if explicit is not None:
        return check_ratio(explicit)
    return read_number(semconv.HEALTHY_TRACE_RATIO_ENV, DEFAULT_HEALTHY_TRACE_RATIO, maximum=1.0)


def ratio_bound(ratio: float) -> int:
    """The trace-id bound of ``TraceIdRatioBased``: the same decision in every process."""
    return TraceIdRatioBased.get_bound_for_rate(ratio)


def ratio_keeps(trace_id: int, bound: int) -> bool:
    return trace_id & TraceIdRatioBased.TRACE_ID_LIMIT < bound


def attributes_of(span: ReadableSpan) -> Mapping[str, Any]:
    """The span's attributes as a plain dict when the SDK keeps one (most keys looked up here
    are missing, and the SDK's mapping answers a missing key by raising underneath)."""
    bounded = getattr(span, "_attributes", None)  # pragma: no mutate: .attributes holds the same
    plain = getattr(bounded, "_dict", None)  # pragma: no mutate: .attributes holds the same
    if isinstance(plain, dict):
        return plain
    return span.attributes or {}


def events_of(span: ReadableSpan) -> Sequence[Event]:
    """The span's events without the copy the SDK's ``events`` property makes each time."""
    raw = getattr(span, "_events", None)  # pragma: no mutate: .events holds the same
    return raw if raw is not None else span.events  # pragma: no mutate: .events holds the same


def outcome_keeps(
    span: ReadableSpan, attributes: Mapping[str, Any], events: Sequence[Event]
) -> bool:
    """Whether ``span`` shows its run must be kept (see the module docstring)."""
    get = attributes.get
    if span.status.status_code is StatusCode.ERROR:
        parent = span.parent
        if parent is None or parent.is_remote:
            return True
        if get(semconv.GEN_AI_OPERATION_NAME) == semconv.OP_INVOKE_AGENT:
            return True
    if get(semconv.NODE_NAME) in _KEPT_NODES:
        return True
    if not _OUTCOME_KEYS.isdisjoint(attributes) and (  # most spans carry none of them
        get(semconv.RUN_OUTCOME) in _KEPT_OUTCOMES
        or get(semconv.REACT_TERMINATION_REASON) is not None
        or get(semconv.RUN_STOP_REASON) in _KEPT_STOPS
        or (get(semconv.RESPONSE_EMPTY) is True and get(semconv.RUN_PAUSED) is not True)
        or get(semconv.SYNTHESIS_RECOVERED) is not None
    ):
        return True
    return any(event.name in _KEPT_EVENTS for event in events)


def estimated_bytes(attributes: Mapping[str, Any], events: Sequence[Event]) -> int:
    """About what holding a span costs: a fixed overhead per span and per attribute, plus its
    string values (the text that makes a span large)."""
    size = SPAN_OVERHEAD_BYTES + _ITEM_OVERHEAD_BYTES * len(attributes)
    for value in attributes.values():
        if value.__class__ is str:
            size += len(value)
    if not len(events):
        return size
    for event in events:
        values = event.attributes or {}
        size += _EVENT_OVERHEAD_BYTES + _ITEM_OVERHEAD_BYTES * len(values)
        for value in values.values():
            if value.__class__ is str:
                size += len(value)
    return size
