"""A run's model calls, the forced final answer (the synthesis fallback) among them.

A call marked ``synthesis`` is the one the framework made to force an answer once its step cap
ran out: node ``react_synthesize_fallback``, its text deciding ``synthesis.recovered`` whatever
the capture, and the run remembers whether it recovered an answer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, TypedDict, Unpack

from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.events import LLMEndEvent
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.invocation.runs import FrameworkRun
from symfonic_otel.invocation.turns import Turn

__all__ = ["MAX_CALL_STARTS", "CallFacts", "HeldCall", "record_call", "token_counts"]

MAX_CALL_STARTS: Final = 256


class CallFacts(TypedDict, total=False):
    """What an adapter knows of one model call besides its turn (all optional)."""

    model: str
    usage: Mapping[str, int]
    started_ns: int | None
    ended_ns: int | None
    error_type: str | None
    node: str
    provider: str | None
    response_id: object
    first_chunk_s: float | None
    attributes: Mapping[str, AttributeValue] | None


def token_counts(usage: object, input_name: str, output_name: str) -> dict[str, int]:
    """A call's ``usage`` (``input_tokens``, ``output_tokens``) from a framework's usage record,
    which names them ``input_name`` and ``output_name``: keys of a mapping, else attributes. A
    count that is missing or not an int is left out."""
    counts: dict[str, int] = {}
    for ours, theirs in (("input_tokens", input_name), ("output_tokens", output_name)):
        value = usage.get(theirs) if isinstance(usage, Mapping) else getattr(usage, theirs, None)
        if isinstance(value, int) and not isinstance(value, bool):
            counts[ours] = value
    return counts


@dataclass(slots=True)
class HeldCall:
    """A finished model call held until the framework shows whether it was the forced final
    answer (the next call starts, or the run ends at its step cap)."""

    turn: Turn | None
    call: CallFacts


def record_call(
    handler: OTelCallbackHandler, run: FrameworkRun, turn: Turn | None, **call: Unpack[CallFacts]
) -> None:
    """One model call of ``run``; its turn, when it has one, becomes the run's last turn. A failed
    call marks the run's last call failed, and keeps the turn before unless it brings its own (a
    stream cut after some text); a forced final answer keeps the loop's last turn, which is what
    a bail reports."""
    node = call.get("node", "")
    error_type = call.get("error_type")
    synthesis = node == semconv.NODE_SYNTHESIZE_FALLBACK
    text = turn.text if turn is not None and (synthesis or handler.capture_content) else ""
    response_id = call.get("response_id")
    ended_ns = call.get("ended_ns")
    attributes = call.get("attributes")
    handler.llm_end(
        LLMEndEvent(
            model=call.get("model", ""),
            output=text,
            usage=dict(call.get("usage") or {}),
            run_id=run.run_id,
            node_name=node,
            iteration_index=run.calls,
            outcome="error" if error_type is not None else "completed",
            stop_reason=turn.finish_reason if turn is not None else None,
            error_type=error_type,
            response_id=response_id if isinstance(response_id, str) else None,
        ),
        provider=call.get("provider"),
        start_time_ns=call.get("started_ns"),
        end_time_ns=ended_ns if ended_ns is not None else time.time_ns(),
        error_type=error_type,
        attributes=dict(attributes) if attributes else None,
        time_to_first_chunk_s=call.get("first_chunk_s"),
    )
    run.calls += 1
    run.last_failed = error_type is not None
    if synthesis:
        run.fallbacks += 1
        run.recovered = error_type is None and turn is not None and not turn.blank
    elif turn is not None:
        run.last = turn
