"""A model call's span times, read from its event: ``started_at_utc`` + ``duration_ms``.

Like every extractor, these take what is usable and substitute the time of receipt for the rest,
flagging the record ``malformed`` so the handler counts the bad event while keeping its span.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from symfonic_otel.read.sanitise import MAX_CALL_MS, in_time_range, parse_utc_ns, valid_duration_ms


@dataclass(slots=True)
class Timing:
    """A model call's span times and duration; ``malformed`` when the event's were unusable."""

    start_ns: int
    end_ns: int
    duration_s: float | None
    malformed: bool


def call_timing(event: object, start_ns: int | None, end_ns: int | None) -> Timing:
    """Explicit nanoseconds, else ``started_at_utc`` + ``duration_ms``, else the time of receipt.

    A start outside the encodable range, a negative, non-finite or absurd duration (over a day)
    is malformed: the span then ends at receipt, and a bad duration records no latency.
    """
    now = time.time_ns()
    if start_ns is not None and end_ns is not None:
        if (
            in_time_range(start_ns)
            and in_time_range(end_ns)
            and 0 <= end_ns - start_ns <= MAX_CALL_MS * 1_000_000
        ):
            return Timing(start_ns, end_ns, (end_ns - start_ns) / 1e9, False)
        return Timing(now, now, None, True)

    malformed = False
    raw_duration = getattr(event, "duration_ms", None)
    duration_ms: float | None = 0.0
    if raw_duration is not None:
        duration_ms = valid_duration_ms(raw_duration)
        malformed = duration_ms is None
    raw_start = getattr(event, "started_at_utc", None)
    start: int | None = None
    if raw_start is not None and raw_start != "":
        start = stamp_ns(raw_start)
        malformed = malformed or start is None
    if duration_ms is None:
        return Timing(now, now, None, True)
    span_ns = int(duration_ms * 1_000_000)
    if start is not None and in_time_range(start + span_ns):
        return Timing(start, start + span_ns, duration_ms / 1000.0, malformed)
    return Timing(now - span_ns, now, duration_ms / 1000.0, malformed or start is not None)


def stamp_ns(raw: object) -> int | None:
    """``started_at_utc`` in epoch nanoseconds: the contract's ISO-8601 text, or a ``datetime``
    (a model that parsed it; naive = UTC); None for anything else (epoch numbers have no unit)."""
    if isinstance(raw, str):
        return parse_utc_ns(raw)
    if not isinstance(raw, datetime):
        return None
    try:
        stamp = raw if raw.tzinfo is not None else raw.replace(tzinfo=UTC)
        nanos = int(stamp.timestamp() * 1_000_000) * 1_000
    except (ValueError, OverflowError, OSError):
        return None
    return nanos if in_time_range(nanos) else None


def explicit_time(value: int | None) -> tuple[int | None, bool]:
    """An adapter's explicit span time: (value, False) when usable, (None, True) when not."""
    if value is None:
        return None, False
    return (value, False) if in_time_range(value) else (None, True)


def has_timing(event: object) -> bool:
    """Whether the event says when its call ran (a start stamp or a non-zero duration)."""
    stamp = getattr(event, "started_at_utc", None)
    duration = getattr(event, "duration_ms", None)
    if stamp is not None and not (isinstance(stamp, str) and stamp == ""):
        return True  # a bad stamp counts as timing: it is read (and counted as malformed)
    return duration is not None and not (isinstance(duration, int | float) and duration == 0)
