"""Caller values made safe for telemetry: text, identifiers and timestamps.

Whatever an event carries ends up in a protobuf message or a Prometheus exposition, and both are
strict: a lone surrogate is not UTF-8, a timestamp before 1970 or after 2554 does not fit a
``fixed64``, and a multi-megabyte attribute makes a span the collector refuses. One bad value
must cost its own field, never the batch it travels in, so every value is checked where it
enters. Each function here is cheap on the common case (short ASCII) and bounded on the worst
case: a huge input is cut before it is scanned.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, TypeGuard

from opentelemetry.util.types import AttributeValue

REPLACEMENT: Final = "\ufffd"
# Byte caps of caller values that become attributes or labels.
MAX_ID_BYTES: Final = 128
MAX_NAME_BYTES: Final = 256
MAX_LABEL_CHARS: Final = 128
# Timestamps outside 2000-01-01 .. 2262-01-01 are not a real model call: int64 nanoseconds (what
# most trace stores keep) end in 2262, and nothing called a model before 2000.
MIN_TIME_NS: Final = 946_684_800 * 1_000_000_000
MAX_TIME_NS: Final = 9_214_646_400 * 1_000_000_000
# One model call taking more than a day is a unit bug (seconds as milliseconds, say).
MAX_CALL_MS: Final = 86_400_000.0

_SURROGATES: Final = re.compile("[\ud800-\udfff]")
_DIGEST_BYTES: Final = 12


def is_real(value: object) -> TypeGuard[int | float]:
    """A finite int or float and not a bool: what an option taking a number may be given."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def clean_text(value: str, max_bytes: int) -> str:
    """``value`` as valid UTF-8 without NUL characters, at most ``max_bytes`` bytes long.

    Lone surrogates and NULs become U+FFFD; the cut falls on a character boundary.
    """
    if len(value) > max_bytes:  # every character is at least one byte: cut before scanning
        value = value[:max_bytes]
    if value.isascii():
        if "\x00" not in value:
            return value
        value = value.replace("\x00", REPLACEMENT)
    else:
        value = _SURROGATES.sub(REPLACEMENT, value).replace("\x00", REPLACEMENT)
    encoded = value.encode("utf-8")
    if len(encoded) <= max_bytes:
        return value
    return encoded[:max_bytes].decode("utf-8", "ignore")


def clean_label(raw: object, max_chars: int = MAX_LABEL_CHARS) -> str:
    """A metric label value: printable characters only, trimmed, at most ``max_chars``."""
    text = raw if isinstance(raw, str) else str(raw)
    text = text[: max_chars * 4].strip()
    if not (text.isascii() and text.isprintable()):
        text = "".join(ch for ch in text if ch.isprintable())  # drops surrogates and controls
    return text[:max_chars].strip()


def run_key(raw: str) -> str:
    """The run id as kept and exported: ``raw`` itself when short and clean, else a digest.

    Ids past ``MAX_ID_BYTES`` or with invalid characters become a readable prefix plus a digest
    of the whole value, so distinct ids stay distinct and a 10 MB id costs one hash, not 10 MB of
    attribute in every span and registry entry.
    """
    if len(raw) <= MAX_ID_BYTES and raw.isascii() and "\x00" not in raw:
        return raw
    cleaned = clean_text(raw, MAX_ID_BYTES)
    if cleaned == raw:
        return raw
    digest = hashlib.blake2b(
        raw.encode("utf-8", "surrogatepass"), digest_size=_DIGEST_BYTES
    ).hexdigest()
    return f"{clean_text(raw, MAX_ID_BYTES // 2)}~{digest}"


def parse_utc_ns(stamp: str) -> int | None:
    """ISO-8601 (no zone = UTC) to epoch nanoseconds; None when unparseable or out of range."""
    if len(stamp) > 64:
        return None
    try:
        parsed = datetime.fromisoformat(stamp)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        nanos = int(parsed.timestamp() * 1_000_000) * 1_000
    except (ValueError, OverflowError, OSError):
        return None
    return nanos if in_time_range(nanos) else None


def in_time_range(nanos: object) -> bool:
    """An epoch-nanosecond int every exporter and trace store can hold."""
    return (
        isinstance(nanos, int)
        and not isinstance(nanos, bool)
        and MIN_TIME_NS <= nanos < MAX_TIME_NS
    )


def valid_duration_ms(value: object, max_ms: float = MAX_CALL_MS) -> float | None:
    """A finite, non-negative duration no longer than ``max_ms``; None otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        return None
    return number if math.isfinite(number) and 0 <= number <= max_ms else None


# A caller's extra span attributes (``llm_end(..., attributes=...)`` and the like): how many, how
# long one string may be (content JSON included), and how many bytes of strings in all, so the
# span stays far below the OTLP message limits.
MAX_EXTRA_ATTRIBUTES: Final = 64
MAX_ATTRIBUTE_BYTES: Final = 64 * 1024
MAX_EXTRA_BYTES: Final = 256 * 1024
MAX_SEQUENCE_ITEMS: Final = 128
_MAX_ITEM_BYTES: Final = 1024
_INT64: Final = 2**63


def clean_attributes(raw: object) -> dict[str, AttributeValue]:
    """A caller's attribute mapping made encodable; unusable entries are left out, never raised.

    Keys must be non-empty strings (capped at ``MAX_NAME_BYTES``); values are bools, int64
    integers, finite floats, strings (cleaned, capped at ``MAX_ATTRIBUTE_BYTES``) or homogeneous
    sequences of those (at most ``MAX_SEQUENCE_ITEMS``, strings of 1 KB). Past
    ``MAX_EXTRA_BYTES`` of strings in all, further string values are left out.
    """
    cleaned: dict[str, AttributeValue] = {}
    if not isinstance(raw, Mapping) or not raw:
        return cleaned
    budget = MAX_EXTRA_BYTES
    try:
        for key, value in itertools.islice(raw.items(), MAX_EXTRA_ATTRIBUTES):
            if not isinstance(key, str) or not key:
                continue
            attribute = _attribute_value(value)
            if attribute is None:
                continue
            size = _size(attribute)
            if size > budget:
                continue
            budget -= size
            cleaned[clean_text(key, MAX_NAME_BYTES)] = attribute
    except Exception:  # a hostile mapping: keep what was read
        pass
    return cleaned


def _size(value: AttributeValue) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, tuple):
        return sum(len(item) for item in value if isinstance(item, str))
    return 0


def _scalar(value: Any, max_bytes: int = MAX_ATTRIBUTE_BYTES) -> bool | int | float | str | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -_INT64 <= value < _INT64 else None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return clean_text(value, max_bytes)
    return None


def _attribute_value(value: Any) -> AttributeValue | None:
    if not isinstance(value, list | tuple):
        return _scalar(value)
    items = [_scalar(item, _MAX_ITEM_BYTES) for item in value[:MAX_SEQUENCE_ITEMS]]
    if any(item is None for item in items):
        return None
    kinds = {type(item) for item in items}
    if kinds <= {str}:
        return tuple(str(item) for item in items)
    if kinds == {bool}:
        return tuple(bool(item) for item in items)
    numbers = [item for item in items if isinstance(item, int | float)]
    if kinds == {int}:
        return tuple(int(item) for item in numbers)
    if kinds <= {int, float}:
        return tuple(float(item) for item in numbers)
    return None
