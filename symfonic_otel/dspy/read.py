"""Readers of DSPy objects by structure: a prediction's answer, an LM call's output and usage."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from symfonic_otel.invocation import Turn, token_counts

__all__ = ["answer_of", "call_kwargs", "lm_turn", "lm_usage"]

_MAX_TEXT: Final = 65_536
_HISTORY_LOOKBACK: Final = 8
# Prediction fields a module adds beside its signature's outputs (ReAct, ChainOfThought).
_NOT_ANSWERS: Final = frozenset({"trajectory", "reasoning"})


def call_kwargs(inputs: object) -> Mapping[str, Any]:
    """The keyword arguments of a ``Module.__call__`` / ``Tool.__call__`` (DSPy's ``inputs``)."""
    kwargs = inputs.get("kwargs") if isinstance(inputs, Mapping) else None
    return kwargs if isinstance(kwargs, Mapping) else {}


def answer_of(instance: object, outputs: object) -> str | None:
    """A prediction's answer: its signature's output fields joined (None: not a prediction)."""
    keys = getattr(outputs, "keys", None)
    get = getattr(outputs, "get", None)
    if not callable(keys) or not callable(get):
        return None
    fields = getattr(getattr(instance, "signature", None), "output_fields", None)
    names = list(fields) if isinstance(fields, Mapping) else list(keys())
    values = [get(name) for name in names if name not in _NOT_ANSWERS]
    return "\n".join(str(v) for v in values if v is not None)[:_MAX_TEXT]


def lm_turn(outputs: object) -> Turn | None:
    """An LM call's first completion (a string, or a dict with ``text``) as a turn."""
    if not isinstance(outputs, list) or not outputs:
        return None
    first = outputs[0]
    text = first.get("text") if isinstance(first, Mapping) else first
    calls = first.get("tool_calls") if isinstance(first, Mapping) else None
    count = len(calls) if isinstance(calls, list) else 0
    return Turn.of([text] if isinstance(text, str) else [], count)


def lm_usage(instance: object, messages: object) -> dict[str, int]:
    """The usage DSPy recorded for this call: the latest history entry holding its messages."""
    history = getattr(instance, "history", None)
    if not isinstance(history, list) or messages is None:
        return {}
    for entry in reversed(history[-_HISTORY_LOOKBACK:]):
        if isinstance(entry, Mapping) and entry.get("messages") is messages:
            return token_counts(entry.get("usage"), "prompt_tokens", "completion_tokens")
    return {}
