"""The call flow: model calls -> ``chat`` (``text_completion``, ``embeddings``) spans and metrics.

A call is recorded at its LLMEnd, with what its LLMStart and first text delta told about it: the
start time when the event has none, the time to first chunk of a streamed call.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.context import Context
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.core import loops
from symfonic_otel.core.call_attributes import span_attributes
from symfonic_otel.core.handler_core import (
    EMPTY_CONTEXT,
    MALFORMED,
    UNKNOWN_RUN,
    HandlerCore,
)
from symfonic_otel.core.steps import PendingModelCall
from symfonic_otel.emit.recorder import span_link
from symfonic_otel.emit.retention_marks import keep_trace
from symfonic_otel.emit.spans import CallContext
from symfonic_otel.read import extract as ex
from symfonic_otel.read import extract_steps as xs
from symfonic_otel.read.sanitise import MAX_CALL_MS, clean_attributes


@dataclass(slots=True)
class Hints:
    """What an adapter knows about a model call beyond the event."""

    provider: str | None
    start_time_ns: int | None
    end_time_ns: int | None
    error_type: str | None
    parent: Context | None
    tenant_id: str | None
    attributes: Mapping[str, AttributeValue] | None = None
    time_to_first_chunk_s: float | None = None
    operation_name: str | None = None


def _seconds(value: object) -> float | None:
    """A time to first chunk in seconds: finite, non-negative, at most a call's maximum."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and 0 <= number <= MAX_CALL_MS / 1000 else None


class CallFlow:
    __slots__ = ("_core",)

    def __init__(self, core: HandlerCore) -> None:
        self._core = core

    def llm_start(self, event: Any) -> None:
        step = xs.model_step(event)
        run = self._core.model_run(step.run_id, "llm_start")
        if run is None:
            return
        run.step_state().start_model(step.node, PendingModelCall(time.time_ns(), time.monotonic()))

    def text_delta(self, event: Any) -> None:
        """The first delta of a pending call sets its time to first chunk; deltas are many, so
        one that matches no call is not counted as a loss. Symfonic's own deltas name no run:
        they belong to the sole open run."""
        run_id = ex.run_id(event)
        run = self._core.run(run_id) if run_id else self._core.runs.sole()
        steps = run.steps if run is not None else None
        if steps is None:
            return
        pending = steps.model(ex.name_text(event, "node_name"))
        if pending is not None and pending.first_chunk_s is None:
            pending.first_chunk_s = max(time.monotonic() - pending.start_monotonic, 0.0)

    def llm_end(self, event: Any, hints: Hints) -> None:
        call = ex.model_call(event, hints.start_time_ns, hints.end_time_ns, hints.error_type)
        self.record(call, hints, hints.start_time_ns is not None or ex.has_timing(event))

    def record(self, call: ex.ModelCall, hints: Hints, timed: bool = True) -> None:
        """Record a call already read into its record (``timed``: its times are its own, not
        to be taken from a pending LLMStart)."""
        core = self._core
        run = core.run(call.run_id)
        pending = run.steps.pop_model(call.node) if run is not None and run.steps else None
        if pending is not None and (pending.request or pending.inputs):  # LLMPreCall / LLMStart
            hints.attributes = span_attributes(pending, hints.attributes)
        if pending is not None and not timed:
            end_ns = time.time_ns()  # the event says nothing of its timing: LLMStart does
            duration_s = max(time.monotonic() - pending.start_monotonic, 0.0)
            end_ns = max(end_ns, pending.start_ns)
            call.timing = ex.Timing(pending.start_ns, end_ns, duration_s, False)
        ttfc = _seconds(hints.time_to_first_chunk_s)
        if ttfc is None and pending is not None:
            ttfc = pending.first_chunk_s
        info = core.models(call.model)
        operation = hints.operation_name
        if operation not in semconv.MODEL_OPERATIONS or operation is None:
            operation = semconv.OP_CHAT
        metrics = core.metrics
        node = metrics.nodes(call.node) if call.node else ""
        provider = metrics.providers(hints.provider) if hints.provider else info.provider
        tenant = run.tenant if run is not None else core.tenant(hints.tenant_id)
        price = info.price
        pricing_unknown = price is None or call.pricing_unknown
        usage = call.usage
        cost = (
            None
            if pricing_unknown or price is None
            else price.cost(
                usage.uncached_input(),
                usage.output_tokens or 0,
                usage.cache_read_tokens,
                usage.cache_creation_tokens,
                usage.cache_creation_1h_tokens,
            )
        )
        recovered = (
            call.error_type is None and not ex.is_blank(call.output)
            if call.node == semconv.NODE_SYNTHESIZE_FALLBACK
            else None
        )
        if hints.parent is not None:  # the adapter's parent wins (a node span of its own)
            parent = hints.parent
        elif run is not None:
            parent = core.parent_in(run)
        else:  # a call of no known run and no parent: a root span (never ambient)
            parent = EMPTY_CONTEXT
        if run is not None:
            run.count_call(call.node, call.iteration)
            loops.model_call(core, run)
        span_context = core.spans.model_call(
            call,
            CallContext(
                call.run_id,
                tenant,
                provider,
                pricing_unknown,
                cost,
                recovered,
                info.span_name
                if operation == semconv.OP_CHAT
                else semconv.operation_span_name(operation, call.model),
                parent,
                operation,
                ttfc,
                clean_attributes(hints.attributes) if hints.attributes else None,
            ),
        )
        if recovered is not None:  # a synthesis fallback: the run's trace is kept whole
            keep_trace(span_context)
        if run is None and call.run_id:  # no run id at all is a standalone call, not a loss
            core.drop("llm_end", UNKNOWN_RUN)
        if call.timing.malformed:
            core.drop("llm_end", MALFORMED)
        metrics.model_call(
            tenant,
            info.label,
            node,
            provider,
            metrics.errors(call.error_type) if call.error_type is not None else None,
            call.timing.duration_s,
            (usage.input_tokens, usage.output_tokens),
            cost,
            pricing_unknown,
            recovered,
            operation,
            ttfc,
            span_link(span_context),
        )
