"""An in-process rig for outcome retention: a real SDK provider, chosen trace ids, memory export.

The ratio decides from the trace id, so the tests choose the ids (``Ids``) on either side of the
``TraceIdRatioBased`` bound instead of counting on chance.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from symfonic_otel import OutcomeRetentionSpanProcessor, semconv
from symfonic_otel.emit.retention_marks import register_judge
from symfonic_otel.export.retention_rules import ratio_bound

HALF = ratio_bound(0.5)
HIGH_BITS = 0x5A5A << 64  # the ratio reads only the low 64 bits of a trace id


def kept_id() -> int:
    """A fresh trace id the ratio 0.5 keeps (marks reach every live processor: ids unshared)."""
    return random.getrandbits(60) << 64 | (HALF - 1)


def dropped_id() -> int:
    """A fresh trace id the ratio 0.5 drops."""
    return random.getrandbits(60) << 64 | HALF


class Ids(IdGenerator):
    """Trace ids queued by the test (random once the queue is empty); span ids counted."""

    def __init__(self) -> None:
        self.queued: list[int] = []
        self._span = 0

    def generate_span_id(self) -> int:
        self._span += 1
        return self._span

    def generate_trace_id(self) -> int:
        return self.queued.pop(0) if self.queued else random.getrandbits(128) | 1


class Recorder(SpanProcessor):
    """An inner processor that records what reaches it, in order (and can fail on a name)."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.started: list[str] = []
        self.contexts: list[Context | None] = []
        self.ended: list[ReadableSpan] = []
        self.flushes: list[int] = []
        self.flush_result = True
        self.shut = False
        self.fail_on = fail_on

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.started.append(span.name)
        self.contexts.append(parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if span.name == self.fail_on:
            raise RuntimeError("the exporting processor failed")
        self.ended.append(span)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        self.flushes.append(timeout_millis)
        return self.flush_result

    def shutdown(self) -> None:
        self.shut = True

    @property
    def names(self) -> list[str]:
        return [span.name for span in self.ended]


class Judge:
    """A span processor's side of the judging protocol: it awaits the roots it was told to."""

    def __init__(self) -> None:
        self.awaited: set[int] = set()
        register_judge(self)

    def awaits_root(self, trace_id: int) -> bool:
        return trace_id in self.awaited


class Rig:
    """A provider whose only span processor is the retention under test."""

    def __init__(
        self, ratio: float = 0.0, *, inner: SpanProcessor | None = None, **options: Any
    ) -> None:
        self.exported = InMemorySpanExporter()
        self.inner = inner if inner is not None else SimpleSpanProcessor(self.exported)
        self.retention = OutcomeRetentionSpanProcessor(
            self.inner, healthy_trace_ratio=ratio, **options
        )
        self.ids = Ids()
        self.provider = TracerProvider(id_generator=self.ids, shutdown_on_exit=False)
        self.provider.add_span_processor(self.retention)
        self.ours = self.provider.get_tracer(semconv.SCOPE_NAME)
        self.foreign = self.provider.get_tracer("someone-else")

    def traces(self) -> Counter[int]:
        """Exported spans per trace id."""
        spans = self.exported.get_finished_spans()
        return Counter(span.context.trace_id for span in spans if span.context is not None)

    def root(self, trace_id: int | None = None, *, foreign: bool = False, **attrs: Any) -> Span:
        if trace_id is not None:
            self.ids.queued.append(trace_id)
        tracer = self.foreign if foreign else self.ours
        span = tracer.start_span("invoke_agent a", attributes=attrs)
        assert isinstance(span, Span)
        return span

    def child(
        self, parent: Span, name: str = "chat", *, foreign: bool = False, **attrs: Any
    ) -> Span:
        tracer = self.foreign if foreign else self.ours
        span = tracer.start_span(name, context=trace.set_span_in_context(parent), attributes=attrs)
        assert isinstance(span, Span)
        return span

    def run(self, trace_id: int | None = None, *, children: int = 1, **child_attrs: Any) -> int:
        """A whole run: a root and ``children`` ended children (the first with the attributes)."""
        root = self.root(trace_id)
        for index in range(children):
            self.child(root, f"chat {index}", **(child_attrs if index == 0 else {})).end()
        root.end()
        return root.get_span_context().trace_id
