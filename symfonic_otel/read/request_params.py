"""A model request's parameters -> ``gen_ai.request.*`` attributes (always on: not content).

Reads provider-native invocation parameters as LangChain chat models and Symfonic's
``LLMPreCallEvent.invocation_params`` carry them (OpenAI, Anthropic, Gemini and Ollama names).
Values of the wrong type or range are left out; nothing here raises.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from typing import Any, Final

from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.read.sanitise import MAX_NAME_BYTES, clean_text

_MAX_STOP_SEQUENCES: Final = 16
# Each attribute and the parameter names that carry it, first match wins.
_FLOATS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    (semconv.GEN_AI_REQUEST_TEMPERATURE, ("temperature",)),
    (semconv.GEN_AI_REQUEST_TOP_P, ("top_p",)),
    (semconv.GEN_AI_REQUEST_FREQUENCY_PENALTY, ("frequency_penalty",)),
    (semconv.GEN_AI_REQUEST_PRESENCE_PENALTY, ("presence_penalty",)),
)
_INTS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    (
        semconv.GEN_AI_REQUEST_MAX_TOKENS,
        ("max_tokens", "max_completion_tokens", "max_output_tokens", "num_predict"),
    ),
    (semconv.GEN_AI_REQUEST_TOP_K, ("top_k",)),
    (semconv.GEN_AI_REQUEST_SEED, ("seed",)),
)
_INT64: Final = 2**63


def request_attributes(params: object) -> dict[str, AttributeValue]:
    """The ``gen_ai.request.*`` attributes of ``params`` (a mapping; anything else gives none)."""
    found: dict[str, AttributeValue] = {}
    if not isinstance(params, Mapping) or not params:
        return found
    with contextlib.suppress(Exception):  # a hostile mapping: keep what was read
        _read(params, found)
    return found


def _read(params: Mapping[Any, Any], found: dict[str, AttributeValue]) -> None:
    for key, names in _FLOATS:
        value = _first(params, names)
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
            if math.isfinite(number):
                found[key] = number
    for key, names in _INTS:
        value = _first(params, names)
        if isinstance(value, int) and not isinstance(value, bool) and -_INT64 <= value < _INT64:
            found[key] = value
    count = params.get("n")
    if isinstance(count, int) and not isinstance(count, bool) and 1 < count < _INT64:
        found[semconv.GEN_AI_REQUEST_CHOICE_COUNT] = count  # semconv: only when not 1
    stream = _first(params, ("stream", "streaming"))
    if isinstance(stream, bool):
        found[semconv.GEN_AI_REQUEST_STREAM] = stream
    stop = _first(params, ("stop", "stop_sequences"))
    if isinstance(stop, str):
        stop = [stop]
    if isinstance(stop, list | tuple) and stop:
        sequences = tuple(
            clean_text(item[: MAX_NAME_BYTES * 4], MAX_NAME_BYTES)
            for item in stop[:_MAX_STOP_SEQUENCES]
            if isinstance(item, str)
        )
        if sequences:
            found[semconv.GEN_AI_REQUEST_STOP_SEQUENCES] = sequences


def _first(params: Mapping[Any, Any], names: tuple[str, ...]) -> object:
    for name in names:
        value = params.get(name)
        if value is not None:
            return value
    return None
