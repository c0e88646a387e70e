"""Guarded extractors: a caller's event, read field by field into one typed record per call.

Events are duck-typed (Symfonic's own objects, this package's dataclasses, anything with the
same attribute names), so every field may be missing, of the wrong type or hostile. Each reader
takes what is usable and falls back to a default: one bad field never loses the event. Values
that fail a check the caller would want to know about (a timestamp no exporter can encode, a
negative duration) set ``malformed`` on the record, which the handler counts while still
recording the event with a sane substitute.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import SimpleNamespace
from typing import Any, Final

from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.read.extract_time import Timing as Timing
from symfonic_otel.read.extract_time import call_timing as call_timing
from symfonic_otel.read.extract_time import explicit_time as explicit_time
from symfonic_otel.read.extract_time import has_timing as has_timing
from symfonic_otel.read.request_params import request_attributes
from symfonic_otel.read.sanitise import (
    MAX_ID_BYTES,
    MAX_NAME_BYTES,
    clean_text,
    run_key,
    valid_duration_ms,
)

OUTCOMES: Final = frozenset({"completed", "error", "cancelled", "abandoned"})
CONTENT_TYPES: Final = frozenset({"str", "list", "NoneType"})
FABRICATION_MODES: Final = frozenset({"off", "observe", "revise", "refuse"})
FABRICATION_ACTIONS: Final = frozenset({"none", "observed", "revise_forced", "refuse_replaced"})
# A run exit the event does not name, derived from its outcome; completed runs stay unset.
_DERIVED_STOP: Final = {
    "error": semconv.STOP_REASON_ERROR,
    "cancelled": semconv.STOP_REASON_INTERRUPTED,
}
# Integer attributes must fit the OTLP int64 and stay meaningful; counts past this are garbage.
_MAX_COUNT: Final = 2**31 - 1
# Token counts past 2**53 are not real usage (and lose precision as floats in histograms).
_MAX_TOKENS: Final = 2**53


def plain(value: object) -> object:
    """An enum member as its value: Symfonic's literals (outcome, phase, mode...) may come as
    enums, whose ``str()`` is ``Cls.NAME`` and which would reach labels as members."""
    return value.value if isinstance(value, Enum) else value


def text(event: object, name: str, default: str = "") -> str:
    value = plain(getattr(event, name, default))
    if value is None:
        return default
    return value if type(value) is str else str(value)


def opt_text(event: object, name: str) -> str | None:
    value = plain(getattr(event, name, None))
    if value is None:
        return None
    return value if type(value) is str else str(value)


def name_text(event: object, name: str) -> str:
    """A name that becomes an attribute or a span name: valid UTF-8, capped in bytes."""
    return clean_text(text(event, name)[: MAX_NAME_BYTES * 4].strip(), MAX_NAME_BYTES)


def number(event: object, name: str) -> float | None:
    """A finite, non-negative number, or None."""
    return valid_duration_ms(getattr(event, name, None), float("inf"))


def count(event: object, name: str, default: int = 0) -> int:
    value = getattr(event, name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_COUNT:
        return default
    return value


def flag(event: object, name: str) -> bool:
    return getattr(event, name, False) is True


def choice(value: str, allowed: frozenset[str]) -> str:
    return value if value in allowed else semconv.OTHER_VALUE


def run_id(event: object) -> str:
    """The event's run id as kept and exported (capped, see ``sanitise.run_key``); "" if none."""
    raw = getattr(event, "run_id", None)
    if raw is None:
        return ""
    return run_key(raw if isinstance(raw, str) else str(raw))


def is_blank(value: str | None) -> bool:
    return value is None or not value.strip()


def _tokens(usage: Mapping[Any, Any], *keys: str) -> int | None:
    for key in keys:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_TOKENS:
            return value
    return None


def cache_in_input(usage: object) -> bool:
    """Whether a provider-shaped usage dict counts cache tokens inside its input tokens.

    Anthropic's raw usage reports ``cache_read_input_tokens`` / ``cache_creation_input_tokens``
    beside ``input_tokens``; every other shape (LangChain's ``input_token_details``, OpenAI's
    ``prompt_tokens_details``) reports them as a part of the input.
    """
    if not isinstance(usage, Mapping):
        return True
    if isinstance(usage.get("input_token_details"), Mapping):
        return True
    return not ("cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage)


@dataclass(slots=True)
class Usage:
    """Token counts as reported (None when absent or unusable), cache tokens included."""

    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_in_input: bool = True  # whether ``input_tokens`` already counts the cache tokens
    reasoning_tokens: int = 0  # part of ``output_tokens``
    # Part of ``cache_creation_tokens``: Anthropic's one-hour writes, billed above the others.
    cache_creation_1h_tokens: int = 0

    def uncached_input(self) -> int:
        cached = self.cache_read_tokens + self.cache_creation_tokens
        plain = (self.input_tokens or 0) - (cached if self.cache_in_input else 0)
        return max(plain, 0)


# Where cache and reasoning counts can be: LangChain's details, OpenAI's, Anthropic's.
_DETAIL_KEYS: Final = frozenset(
    {
        "input_token_details",
        "output_token_details",
        "prompt_tokens_details",
        "completion_tokens_details",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    }
)


def _detail(raw: Mapping[Any, Any], details_key: str, key: str) -> int:
    details = raw.get(details_key)
    if not isinstance(details, Mapping):
        return 0
    return _tokens(details, key) or 0


def usage(event: object) -> Usage:
    """Token counts, read the way seed 003's ``TokenUsage`` reads them (first usable source
    wins): LangChain's ``usage_metadata`` details, OpenAI's and Anthropic's raw usage."""
    return usage_of(getattr(event, "usage", None))


def usage_of(raw: object) -> Usage:
    """``usage`` of a usage mapping itself (what an adapter holds); no counts for anything else."""
    if not isinstance(raw, Mapping):
        return Usage(None, None)
    reading = Usage(
        _tokens(raw, "input_tokens", "prompt_tokens"),
        _tokens(raw, "output_tokens", "completion_tokens"),
    )
    if _DETAIL_KEYS.isdisjoint(raw):  # plain counts, the common case
        return reading
    reading.cache_read_tokens = (
        _detail(raw, "input_token_details", "cache_read")
        or _detail(raw, "prompt_tokens_details", "cached_tokens")
        or _tokens(raw, "cache_read_input_tokens")
        or 0
    )
    reading.cache_creation_tokens = _detail(raw, "input_token_details", "cache_creation") or (
        _tokens(raw, "cache_creation_input_tokens") or 0
    )
    reading.cache_creation_1h_tokens = _detail(
        raw, "input_token_details", "ephemeral_1h_input_tokens"
    ) or _detail(raw, "cache_creation", "ephemeral_1h_input_tokens")
    reading.reasoning_tokens = _detail(raw, "output_token_details", "reasoning") or _detail(
        raw, "completion_tokens_details", "reasoning_tokens"
    )
    if reading.cache_read_tokens or reading.cache_creation_tokens:
        reading.cache_in_input = cache_in_input(raw)
    return reading


def stop_reason(event: object) -> str | None:
    """The event's stop reason (raw provider value or run exit), cleaned; None if absent."""
    return clean_stop_reason(getattr(event, "stop_reason", None))


def clean_stop_reason(value: object) -> str | None:
    """A stop reason as recorded: text, trimmed, capped at 64 bytes; None if absent or blank."""
    value = plain(value)
    if value is None:
        return None
    cleaned = clean_text((value if isinstance(value, str) else str(value))[:256].strip(), 64)
    return cleaned or None


def error_type(explicit: str | None, event: object) -> str | None:
    """The exception type: the adapter's explicit value, else the event's ``error_type``."""
    value: object = explicit if explicit else getattr(event, "error_type", None)
    if value is None or value == "":
        return None
    cleaned = clean_text((value if isinstance(value, str) else str(value))[:1024].strip(), 128)
    return cleaned or None


@dataclass(slots=True)
class ModelCall:
    """One model completion, read from an LLMEnd event (and what the adapter knew of it)."""

    run_id: str
    model: str
    node: str
    iteration: int
    error_type: str | None  # set when the call failed: the exception type, else ``_OTHER``
    finish_reason: str | None
    output: str
    timing: Timing
    usage: Usage
    pricing_unknown: bool  # the event's own flag
    # The span attributes of the event's optional fields (response id and model, forced tool
    # choice, request parameters), built once; None when it carries none (Symfonic's own).
    details: dict[str, AttributeValue] | None


def model_call(
    event: object, start_ns: int | None, end_ns: int | None, explicit_error: str | None
) -> ModelCall:
    failed = text(event, "outcome", "completed") == "error" or explicit_error is not None
    return ModelCall(
        run_id=run_id(event),
        model=name_text(event, "model"),
        node=name_text(event, "node_name"),
        iteration=count(event, "iteration_index"),
        error_type=(error_type(explicit_error, event) or semconv.OTHER_VALUE) if failed else None,
        finish_reason=stop_reason(event),
        output=text(event, "output"),
        timing=call_timing(event, start_ns, end_ns),
        usage=usage(event),
        pricing_unknown=flag(event, "pricing_unknown"),
        details=call_details(event),
    )


# This package's optional LLMEnd fields: (attribute, field, byte cap).
_OPTIONAL_NAMES: Final = (
    (semconv.GEN_AI_RESPONSE_ID, "response_id", MAX_ID_BYTES),
    (semconv.GEN_AI_RESPONSE_MODEL, "response_model", MAX_NAME_BYTES),
    (semconv.REACT_FORCED_TOOL_CHOICE, "forced_tool_choice", MAX_NAME_BYTES),
)


def call_details(event: object) -> dict[str, AttributeValue] | None:
    details: dict[str, AttributeValue] | None = None
    for key, name, max_bytes in _OPTIONAL_NAMES:
        value = opt_name(event, name, max_bytes)
        if value is not None:
            if details is None:
                details = {}
            details[key] = value
    params = getattr(event, "invocation_params", None)
    if params:
        request = request_attributes(params)
        if request:
            details = request if details is None else {**details, **request}
    return details


def opt_name(event: object, name: str, max_bytes: int) -> str | None:
    """An optional short value (an id, a name), cleaned and capped; None when absent or blank."""
    value = getattr(event, name, None)
    if value is None:
        return None
    raw = value if isinstance(value, str) else str(value)
    cleaned = clean_text(raw[: max_bytes * 4].strip(), max_bytes)
    return cleaned or None


@dataclass(slots=True)
class RunEnd:
    """How a run ended, read from an AgentEnd event."""

    outcome: str
    final_response: str | None
    empty: bool | None
    stop_reason: str | None
    duration_ms: float | None  # None: measure it instead
    malformed: bool
    unreadable: Exception | None = None  # the first field that raised on read


_RUN_END_FIELDS: Final = ("outcome", "final_response", "duration_ms", "stop_reason")


def run_end(event: object, answered: object, bailed: bool, max_ms: float) -> RunEnd:
    """Each field is read once, on its own: one that raises on read (a lazy property over a
    store that is down, say) is taken as absent, and the run still ends, counted malformed."""
    failures: list[Exception] = []
    values: dict[str, Any] = {}
    for name in _RUN_END_FIELDS:
        try:
            values[name] = getattr(event, name, None)
        except Exception as exc:
            failures.append(exc)
            values[name] = None
    fields = SimpleNamespace(**values)
    outcome = choice(text(fields, "outcome", "completed"), OUTCOMES)
    final_response = opt_text(fields, "final_response")  # unreadable: the answer is unknown
    duration_ms = valid_duration_ms(fields.duration_ms, max_ms)
    return RunEnd(
        outcome=outcome,
        final_response=final_response,
        empty=empty_flag(outcome, final_response, answered, bailed),
        stop_reason=stop_reason(fields) or _DERIVED_STOP.get(outcome),
        duration_ms=duration_ms,
        malformed=bool(failures) or (fields.duration_ms is not None and duration_ms is None),
        unreadable=failures[0] if failures else None,
    )


def empty_flag(
    outcome: str, final_response: str | None, answered: object, bailed: bool
) -> bool | None:
    """``symfonic.response.empty``: set only on completed runs whose answer is known.

    ``answered`` (an adapter's verdict, e.g. a LangGraph state that is not a message) wins;
    ``final_response=None`` is the Symfonic streaming path: unknown, unless the run reported a
    silent bail, which streaming cannot recover.
    """
    if outcome != "completed":
        return None
    if isinstance(answered, bool):
        return not answered
    if final_response is None:
        return True if bailed else None
    return not final_response.strip()


# The untyped companion Symfonic v7.0.7 still delivers to ``on_fabrication_detected`` beside the
# typed event (seed 003): an ``ExtensionEvent`` of one of these types, a second copy of it.
_LEGACY_FABRICATION_TYPES: Final = frozenset({"fabrication_detected", "fabrication_blocked"})


def legacy_fabrication(event: object) -> bool:
    """Whether the event is that companion (no ``action_taken``, a legacy ``type``)."""
    if getattr(event, "action_taken", None) is not None:
        return False
    return text(event, "type") in _LEGACY_FABRICATION_TYPES


def loop_end_attributes(event: object, reason: str) -> dict[str, object]:
    """The ``symfonic.react.loop_end`` span event's attributes."""
    return {
        semconv.REACT_TERMINATION_REASON: reason,
        semconv.REACT_ITERATION_INDEX: count(event, "iteration_index"),
        semconv.REACT_CONTENT_TYPE: choice(text(event, "content_type"), CONTENT_TYPES),
        semconv.REACT_HAS_TOOL_CALLS: flag(event, "has_tool_calls"),
        semconv.REACT_TOOL_CALL_COUNT: count(event, "tool_call_count"),
    }
