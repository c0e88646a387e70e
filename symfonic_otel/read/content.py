"""Content capture: whether prompt / response / preview text may leave the process, and how much.

Off by default. Follows the GenAI instrumentations' switch,
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``; an explicit constructor argument wins.
"""

from __future__ import annotations

import json

from symfonic_otel import semconv
from symfonic_otel.environment import read_choice
from symfonic_otel.read.sanitise import clean_text

MAX_CONTENT_CHARS = 4096
_ENABLED_VALUES = frozenset({"true", "span_only", "span_and_event"})
# The switch's other values (semconv's, and ``false``): content stays in the process.
_KNOWN_VALUES = _ENABLED_VALUES | {"false", "no_content", "event_only"}


def resolve_capture(capture_content: bool | None) -> bool:
    if capture_content is None:
        chosen = read_choice(
            semconv.CAPTURE_CONTENT_ENV, _KNOWN_VALUES, "false", instead="no capture (the default)"
        )
        return chosen in _ENABLED_VALUES
    if not isinstance(capture_content, bool):
        raise TypeError(f"capture_content must be True, False or None, got {capture_content!r}")
    return capture_content


def truncate(text: str, limit: int = MAX_CONTENT_CHARS) -> tuple[str, bool]:
    """At most ``limit`` characters of valid UTF-8 (lone surrogates and NULs replaced)."""
    if len(text) <= limit:
        return clean_text(text, limit * 4), False
    return clean_text(text[:limit], limit * 4), True


def messages_json(role: str, text: str, finish_reason: str | None = None) -> tuple[str, bool]:
    """A GenAI-semconv message list holding one text part, truncated to the capture limit.

    ``finish_reason`` is for output messages, where semconv requires one.
    """
    clipped, truncated = truncate(text)
    message: dict[str, object] = {"role": role, "parts": [{"type": "text", "content": clipped}]}
    if finish_reason is not None:
        message["finish_reason"] = finish_reason
    return json.dumps([message], ensure_ascii=False), truncated


def json_text(value: object) -> tuple[str, bool]:
    """A tool's arguments or result as text: strings as they are, anything else as JSON.

    Truncated to the capture limit; a value that cannot be serialised becomes its ``repr``-like
    string form rather than failing.
    """
    if isinstance(value, str):
        return truncate(value)
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except Exception:  # circular, or a default= that raises: fall back to the string form
        try:
            text = str(value)
        except Exception:
            text = ""
    return truncate(text)
