"""The SDK's own minimum for our telemetry: the same spans and measurements, with no logic.

``discover`` runs our subject on a spy SDK and notes, after every callback (or event), which
spans it started and ended (name, kind, parent, final attributes, span events, status) and which
measurements it asked for (instrument, value, attributes, context). The spy collects after every
callback, so the counter increments our handler sums in-process are seen one by one: the plan
holds every logical ``add``, not the merged ones. Warm-up turns come first, so one-off work (the
zero-seeded series of a new tenant) is not part of the per-turn plan.

``Replay`` makes exactly that telemetry through the SDK: at the n-th callback of a turn it starts
and ends the plan's spans (all attributes passed at start, the cheapest way to set them) and makes
the plan's histogram records and counter adds directly, with precomputed attribute dicts. No
payload is read, nothing is looked up or deferred: what the SDK itself charges for this telemetry.
``SdkMinimum`` is the replay as a LangChain callback handler.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.trace import SpanKind, Status, StatusCode

# Every LangChain callback a handler can act on in these workloads: the tap and the replay hook
# the same ones, so the n-th callback of a turn is the same event for both.
LANGCHAIN_CALLBACKS = (
    "on_chain_start",
    "on_chain_end",
    "on_chain_error",
    "on_chat_model_start",
    "on_llm_start",
    "on_llm_new_token",
    "on_llm_end",
    "on_llm_error",
    "on_tool_start",
    "on_tool_end",
    "on_tool_error",
    "on_retriever_start",
    "on_retriever_end",
    "on_retriever_error",
)

# --- the spy SDK -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    instrument: int  # index into Spy.instruments
    method: str  # "add" or "record"
    value: float
    attributes: dict[str, Any]
    context: Context | None


class _SpyInstrument:
    """Delegates to the real instrument and logs every measurement."""

    def __init__(self, real: Any, index: int, log: list[Measurement]) -> None:
        self._real, self._index, self._log = real, index, log

    def add(self, amount: float, attributes: Any = None, context: Any = None) -> None:
        self._log.append(Measurement(self._index, "add", amount, dict(attributes or {}), context))
        self._real.add(amount, attributes, context)

    def record(self, amount: float, attributes: Any = None, context: Any = None) -> None:
        self._log.append(
            Measurement(self._index, "record", amount, dict(attributes or {}), context)
        )
        self._real.record(amount, attributes, context)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _SpyMeter:
    def __init__(self, spy: Spy, meter_args: tuple[Any, ...], meter: Any) -> None:
        self._spy, self._meter_args, self._meter = spy, meter_args, meter

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._meter, name)
        if not name.startswith("create_") or name.startswith("create_observable"):
            return real  # observable instruments (the collection hook) run as they are

        def create(*args: Any, **kwargs: Any) -> _SpyInstrument:
            spy = self._spy
            spy.instruments.append((self._meter_args, name, args, kwargs))
            return _SpyInstrument(real(*args, **kwargs), len(spy.instruments) - 1, spy.log)

        return create


class _SpyMeterProvider:
    def __init__(self, spy: Spy, real: MeterProvider) -> None:
        self._spy, self._real = spy, real

    def get_meter(self, *args: Any, **kwargs: Any) -> _SpyMeter:
        key = (*args, *sorted(kwargs.items()))
        return _SpyMeter(self._spy, key, self._real.get_meter(*args, **kwargs))


class _SpanLog(SpanProcessor):
    def __init__(self) -> None:
        self.started: list[Span] = []
        self.ended: list[ReadableSpan] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.started.append(span)

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(span)


@dataclass
class _RawStep:
    started: list[Span]
    ended: list[ReadableSpan]
    measurements: list[Measurement]


class Spy:
    """A tracer provider and a meter provider that see everything a subject does."""

    def __init__(self) -> None:
        self.instruments: list[tuple[tuple[Any, ...], str, tuple[Any, ...], dict[str, Any]]] = []
        self.log: list[Measurement] = []
        self._spans = _SpanLog()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(self._spans)
        self._reader = InMemoryMetricReader()
        self._real_meter_provider = MeterProvider(metric_readers=[self._reader])
        self.meter_provider: Any = _SpyMeterProvider(self, self._real_meter_provider)
        self.steps: list[_RawStep] = []
        self._marks = (0, 0, 0)

    def step(self) -> None:
        """Close a step: what was started, ended and measured since the previous one."""
        self._reader.get_metrics_data()  # a collection: deferred measurements are applied now
        s, e, m = self._marks
        spans = self._spans
        self.steps.append(_RawStep(spans.started[s:], spans.ended[e:], self.log[m:]))
        self._marks = (len(spans.started), len(spans.ended), len(self.log))

    def reset(self) -> None:
        self.step()
        self.steps = []

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self._real_meter_provider.shutdown()


# --- the plan -------------------------------------------------------------------------------

SpanStart = tuple[int, str, SpanKind, int | None, dict[str, Any]]
SpanEnd = tuple[int, tuple[tuple[str, dict[str, Any]], ...], Status | None]
Record = tuple[int, str, float, dict[str, Any], int | None]


@dataclass(frozen=True)
class Step:
    starts: tuple[SpanStart, ...]
    ends: tuple[SpanEnd, ...]
    records: tuple[Record, ...]


@dataclass(frozen=True)
class Plan:
    """One turn's telemetry, step by step (a step per callback or event)."""

    instruments: tuple[tuple[tuple[Any, ...], str, tuple[Any, ...], dict[str, Any]], ...]
    steps: tuple[Step, ...]
    span_count: int

    def shape(self) -> tuple[Any, ...]:
        """What must match ours: span names, kinds, attribute / event counts, parents, and the
        measurements per instrument and attribute-set size, in order."""
        spans = [(s[1], s[2], len(s[4]), s[3]) for step in self.steps for s in step.starts]
        events = [tuple(len(a) for _, a in e[1]) for step in self.steps for e in step.ends]
        records = [
            (self.instruments[r[0]][2][0], r[1], len(r[3]), r[4] is not None)
            for step in self.steps
            for r in step.records
        ]
        return tuple(spans), tuple(events), tuple(records)

    def describe(self) -> str:
        spans = [s for step in self.steps for s in step.starts]
        records = [r for step in self.steps for r in step.records]
        kinds = Counter(r[1] for r in records)
        per_span = ", ".join(f"{s[1].split(' ')[0]} {len(s[4])}" for s in spans)
        return (
            f"{len(spans)} spans (attributes: {per_span}), "
            f"{kinds['record']} histogram records, {kinds['add']} counter adds, "
            f"{len(self.steps)} callbacks per turn"
        )


def _compile(raw: Sequence[_RawStep], spy: Spy) -> Plan:
    index: dict[int, int] = {}
    for step in raw:
        for span in step.started:
            index[span.context.span_id] = len(index)
    steps: list[Step] = []
    for step in raw:
        starts: list[SpanStart] = []
        for span in step.started:
            parent = index.get(span.parent.span_id) if span.parent is not None else None
            attributes = dict(span.attributes or {})  # final: the span has ended since
            starts.append((index[span.context.span_id], span.name, span.kind, parent, attributes))
        ends: list[SpanEnd] = []
        for ended in step.ended:
            if ended.context is None or ended.context.span_id not in index:
                raise RuntimeError(f"span {ended.name!r} ended in the turn but began before it")
            events = tuple((e.name, dict(e.attributes or {})) for e in ended.events)
            status = ended.status if ended.status.status_code != StatusCode.UNSET else None
            if ended.links:
                raise RuntimeError("span links are not replayed")
            ends.append((index[ended.context.span_id], events, status))
        records: list[Record] = []
        for m in step.measurements:
            span_id = None
            if m.context is not None:
                current = trace.get_current_span(m.context).get_span_context()
                span_id = index.get(current.span_id) if current.is_valid else None
            records.append((m.instrument, m.method, m.value, m.attributes, span_id))
        steps.append(Step(tuple(starts), tuple(ends), tuple(records)))
    return Plan(tuple(spy.instruments), tuple(steps), len(index))


def discover(
    make: Callable[[Any], Any], turn: Callable[[Any, Callable[[], None]], None], warm_up: int = 3
) -> Plan:
    """The plan of one turn of the subject ``make(sdk)`` builds.

    ``turn(subject, step)`` runs one turn and calls ``step()`` after every callback or event.
    Two turns are recorded after the warm-up and must agree, or the workload is not
    deterministic enough to be replayed by position.
    """
    spy = Spy()
    try:
        subject = make(spy)
        for _ in range(warm_up):
            turn(subject, spy.step)
        plans = []
        for _ in range(2):
            spy.reset()
            turn(subject, spy.step)
            plans.append(_compile(spy.steps, spy))
    finally:
        spy.shutdown()
    if plans[0].shape() != plans[1].shape():
        raise RuntimeError("two turns made different telemetry: no plan to replay")
    return plans[1]


# --- the replay ---------------------------------------------------------------------------------


class Replay:
    """Makes the plan's telemetry through the SDK, one ``step()`` per callback or event."""

    def __init__(self, tracer_provider: TracerProvider, meter_provider: MeterProvider, plan: Plan):
        self._tracer = tracer_provider.get_tracer("sdk-minimum")
        meters: dict[tuple[Any, ...], Any] = {}
        instruments: list[Any] = []
        for meter_args, create, args, kwargs in plan.instruments:
            if meter_args not in meters:
                meters[meter_args] = meter_provider.get_meter("sdk-minimum")
            instruments.append(getattr(meters[meter_args], create)(*args, **kwargs))
        self._steps = tuple(
            (
                step.starts,
                step.ends,
                tuple(
                    (getattr(instruments[i], method), value, attributes, span)
                    for i, method, value, attributes, span in step.records
                ),
            )
            for step in plan.steps
        )
        self._spans: list[Any] = [None] * plan.span_count
        self._cursor = 0

    def step(self, *args: Any, **kwargs: Any) -> None:
        starts, ends, records = self._steps[self._cursor]
        self._cursor = (self._cursor + 1) % len(self._steps)
        spans, tracer = self._spans, self._tracer
        for index, name, kind, parent, attributes in starts:
            context = trace.set_span_in_context(spans[parent]) if parent is not None else None
            spans[index] = tracer.start_span(name, context, kind, attributes)
        for index, events, status in ends:
            span = spans[index]
            for name, attributes in events:
                span.add_event(name, attributes)
            if status is not None:
                span.set_status(status)
            span.end()
        for measure, value, attributes, span_index in records:
            if span_index is None:
                measure(value, attributes)
            else:
                measure(value, attributes, trace.set_span_in_context(spans[span_index]))


class SdkMinimum(BaseCallbackHandler):
    """The replay as a LangChain handler: every callback is the next step of the plan."""

    run_inline = True

    def __init__(
        self, tracer_provider: TracerProvider, meter_provider: MeterProvider, plan: Plan
    ) -> None:
        super().__init__()
        step = Replay(tracer_provider, meter_provider, plan).step
        for name in LANGCHAIN_CALLBACKS:
            setattr(self, name, step)


class LangChainTap(BaseCallbackHandler):
    """Placed after the subject's handlers: closes a discovery step after every callback."""

    run_inline = True

    def __init__(self, step: Callable[[], None]) -> None:
        super().__init__()

        def on_any(*args: Any, **kwargs: Any) -> None:
            step()

        for name in LANGCHAIN_CALLBACKS:
            setattr(self, name, on_any)
