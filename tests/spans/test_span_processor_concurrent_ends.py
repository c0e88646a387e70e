"""Spans of one trace ending at once in two threads: a call whose fold has begun before its
agent span ends is part of that run.

The interleaving is made, not hoped for: the model call's span is a ``ReadableSpan`` whose end
time, read while the processor folds it, holds that fold open until the agent span's end has
had every chance to take the run's pending calls out from under it.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from opentelemetry.sdk.metrics.export import HistogramDataPoint
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, TraceFlags

from symfonic_otel import semconv
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry

PEER = InstrumentationScope("peer-instrumentation")
TRACE_ID = 0x5EED
TOOL_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "name": "add"}]}])
TEXT_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}])
# How long the held fold waits for the agent span's end to show in the processor's table; the
# agent span's end needs well under a millisecond of work to get there, when it can.
_HOLD_S = 0.1


def _context(span_id: int) -> SpanContext:
    return SpanContext(TRACE_ID, span_id, is_remote=False, trace_flags=TraceFlags(1))


def _chat(span_id: int, finish: str, output: str, end: int) -> dict[str, Any]:
    return {
        "name": "chat peer-model",
        "context": _context(span_id),
        "parent": _context(1),
        "attributes": {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
            semconv.GEN_AI_RESPONSE_FINISH_REASONS: (finish,),
            semconv.GEN_AI_OUTPUT_MESSAGES: output,
        },
        "start_time": end - 1_000,
        "end_time": end,
        "instrumentation_scope": PEER,
    }


class _HeldFold(ReadableSpan):
    """A model call's span: reading its end time (done under the processor's fold) signals
    ``folding`` and holds the fold until the agent span's pending leaves the table, or
    ``_HOLD_S`` has passed."""

    def __init__(self, processor: SilentBailSpanProcessor, **fields: Any) -> None:
        super().__init__(**fields)
        self.processor = processor
        self.folding = threading.Event()

    @property
    def end_time(self) -> int | None:
        if not self.folding.is_set():
            self.folding.set()
            deadline = time.monotonic() + _HOLD_S
            while self.processor.open_traces and time.monotonic() < deadline:
                time.sleep(0.0005)
        return self._end_time


def test_a_call_folded_while_its_agent_span_ends_elsewhere_counts_for_the_run(
    telemetry: InMemoryTelemetry,
) -> None:
    processor = SilentBailSpanProcessor(meter_provider=telemetry.meter_provider)
    agent = ReadableSpan(
        "invoke_agent peer",
        context=_context(1),
        attributes={semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT},
        start_time=1_000,
        end_time=10_000,
        instrumentation_scope=PEER,
    )
    processor.on_end(ReadableSpan(**_chat(2, "tool_calls", TOOL_TURN, 4_000)))
    assert processor.open_traces == 1  # the agent span holds the first call
    answer = _HeldFold(processor, **_chat(3, "stop", TEXT_TURN, 8_000))
    folding = threading.Thread(target=processor.on_end, args=(answer,))
    folding.start()
    assert answer.folding.wait(5.0)
    ending = threading.Thread(target=processor.on_end, args=(agent,))
    ending.start()
    folding.join(5.0)
    ending.join(5.0)
    assert not folding.is_alive() and not ending.is_alive()
    assert telemetry.value(semconv.AGENT_RUNS.name) == 1
    (iterations,) = [value for _, value in telemetry.points(semconv.REACT_ITERATIONS.name)]
    assert isinstance(iterations, HistogramDataPoint)
    assert iterations.sum == 2  # both calls, the answer included
    assert telemetry.value(semconv.SILENT_BAILS.name) == 0
    assert processor.open_traces == 0
