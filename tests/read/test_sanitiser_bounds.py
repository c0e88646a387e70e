"""Limits exactly at their bound and one past it, caches fed keys that differ in one field, and
loops over several collaborators with one of them failing.

Each test pins a place where a plausible one-character slip (``<`` for ``<=``, a cache key
missing a field, a loop that stops at the first failure) would pass every test that stays far
from the edge, uses one key or one collaborator.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from prometheus_client import CollectorRegistry

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.agent import ReactAgent, StreamFinal
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.export import lifecycle
from symfonic_otel.export.prometheus import LatestCollectionReader, ScrapeCollector
from symfonic_otel.export.span_export import DropCountingBatchSpanProcessor
from symfonic_otel.read.sanitise import MAX_TIME_NS
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_support import TOOLS, Recorder, turn

MALFORMED = {"symfonic.telemetry.drop_reason": "malformed"}


# --- the sanitiser: time range and int64, at the bound and one past --------------------------


@pytest.mark.parametrize(("start_ns", "kept"), [(MAX_TIME_NS - 1, True), (MAX_TIME_NS, False)])
def test_start_time_at_the_upper_bound_is_rejected_one_below_is_kept(
    telemetry: InMemoryTelemetry, start_ns: int, kept: bool
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"), start_time_ns=start_ns)
    handler.agent_end(AgentEndEvent("r", "a", 1.0, 1), end_time_ns=start_ns)
    span = telemetry.span("invoke_agent symfonic")
    assert (span.start_time == start_ns) is kept
    assert telemetry.value("symfonic.telemetry.dropped_events", MALFORMED) == (0 if kept else 1)
    encode_spans([span])  # whatever was kept, the OTLP encoder takes it


def _encoded_attributes(span: Any) -> dict[str, Any]:
    """The span's attributes as the real OTLP encoder wrote them (it skips what it cannot)."""
    [encoded] = encode_spans([span]).resource_spans[0].scope_spans[0].spans
    return {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in encoded.attributes}


@pytest.mark.parametrize(
    ("value", "kept"),
    [(2**63 - 1, True), (2**63, False), (-(2**63), True), (-(2**63) - 1, False)],
)
def test_int_attribute_at_the_int64_bound_is_kept_one_past_is_left_out(
    telemetry: InMemoryTelemetry, value: int, kept: bool
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"), attributes={"app.count": value, "app.ok": 1})
    handler.agent_end(AgentEndEvent("r", "a", 1.0, 1))
    span = telemetry.span("invoke_agent symfonic")
    assert span.attributes is not None and span.attributes["app.ok"] == 1
    assert ("app.count" in span.attributes) is kept
    encoded = _encoded_attributes(span)
    assert encoded.keys() == span.attributes.keys()  # the encoder lost nothing we kept
    assert (encoded.get("app.count") == value) is kept


def test_the_encoder_itself_loses_an_int_one_past_int64(caplog: pytest.LogCaptureFixture) -> None:
    """The bound above is the encoder's: one past it, the attribute does not reach the wire."""
    tracer = TracerProvider().get_tracer("t")
    at_bound = tracer.start_span("ok", attributes={"n": 2**63 - 1})
    at_bound.end()
    assert _encoded_attributes(at_bound) == {"n": 2**63 - 1}
    past = tracer.start_span("bad")
    past._attributes._dict["n"] = 2**63  # type: ignore[attr-defined]  # past the SDK's own check
    past.end()
    assert _encoded_attributes(past) == {}


# --- span export: queue admission at the cap and one past ------------------------------------


class _HeldExporter(SpanExporter):
    """Blocks in its first export until released, so nothing else leaves the queue meanwhile."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.exported = 0

    def export(self, spans: Any) -> SpanExportResult:
        self.entered.set()
        self.release.wait(10)
        self.exported += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.release.set()


@pytest.mark.parametrize(("extra", "dropped"), [(0, 0), (1, 1)])
def test_span_queue_admits_exactly_its_cap_and_drops_one_past(extra: int, dropped: int) -> None:
    cap = 4
    exporter = _HeldExporter()
    processor = DropCountingBatchSpanProcessor(
        exporter, max_queue_size=cap, max_export_batch_size=1, schedule_delay_millis=60_000
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("t")
    try:
        tracer.start_span("first").end()  # taken by the worker, which then blocks exporting it
        assert exporter.entered.wait(10)
        for index in range(cap + extra):  # ``cap`` waiting spans fill the queue exactly
            tracer.start_span(f"s{index}").end()
        assert processor.losses[semconv.SPAN_DROP_QUEUE_FULL] == dropped
    finally:
        exporter.release.set()
        provider.shutdown()
    assert exporter.exported == 1 + cap
    assert processor.dropped_spans == dropped


# --- exemplars: a value on a bucket boundary belongs to that bucket ---------------------------


def _exemplar_buckets(registry: CollectorRegistry, family: str) -> dict[str, float]:
    """``le`` of each bucket sample of ``family`` that carries an exemplar, with its value."""
    found = {}
    for metric in registry.collect():
        if metric.name != family:
            continue
        for sample in metric.samples:
            if sample.name.endswith("_bucket") and sample.exemplar is not None:
                found[sample.labels["le"]] = sample.exemplar.value
    return found


@pytest.mark.parametrize("seconds", [2.56, 2.5600001, 0.01])
def test_exemplar_on_a_bucket_boundary_sits_on_that_bucket(seconds: float) -> None:
    families = CollectorRegistry(auto_describe=True)
    reader = LatestCollectionReader(families)
    served = CollectorRegistry()
    served.register(ScrapeCollector(families, reader))
    meter_provider = MeterProvider(metric_readers=[reader])
    tracer_provider = TracerProvider()
    handler = OTelCallbackHandler(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        handler.agent_start(AgentStartEvent("q", "r"))
        handler.agent_end(AgentEndEvent("r", "a", seconds * 1000.0, 1))
        buckets = _exemplar_buckets(served, "gen_ai_invoke_agent_duration_seconds")
    finally:
        meter_provider.shutdown()
        tracer_provider.shutdown()
    # Prometheus buckets are ``le``: a value equal to a bound is counted in that bound's bucket.
    bound = next(b for b in semconv.AGENT_DURATION_BUCKETS if seconds <= b)
    assert buckets == {str(bound): pytest.approx(seconds)}


# --- shutdown: every handler's runs close, though one handler's close raises ------------------


class _BrokenHandler:
    def __init__(self) -> None:
        self.asked = 0

    def exports_to(self, tracer_provider: object, meter_provider: object, is_global: bool) -> bool:
        return True

    def close_open_runs(self) -> int:
        self.asked += 1
        raise RuntimeError("close failed")


@pytest.fixture
def three_handlers(telemetry: InMemoryTelemetry) -> Iterator[list[OTelCallbackHandler]]:
    handlers = [telemetry.handler() for _ in range(3)]
    for index, handler in enumerate(handlers):
        handler.agent_start(AgentStartEvent("q", f"run-{index}"))
    yield handlers
    for handler in handlers:
        handler.close_open_runs()


@pytest.mark.parametrize("broken_at", [0, 1, 2, 3])
@pytest.mark.parametrize("closer", ["close_runs_of", "close_all"])
def test_every_handler_closes_its_runs_though_one_close_raises(
    telemetry: InMemoryTelemetry,
    three_handlers: list[OTelCallbackHandler],
    monkeypatch: pytest.MonkeyPatch,
    broken_at: int,
    closer: str,
) -> None:
    broken = _BrokenHandler()
    ordered: list[Any] = list(three_handlers)
    ordered.insert(broken_at, broken)
    monkeypatch.setattr(lifecycle, "_handlers", ordered)  # iteration order under test control
    if closer == "close_runs_of":
        closed = lifecycle.close_runs_of(telemetry.tracer_provider, telemetry.meter_provider, False)
    else:
        closed = lifecycle.close_all()
    assert closed == 3 and broken.asked == 1
    assert [h.open_runs for h in three_handlers] == [0, 0, 0]
    assert telemetry.value("symfonic.agent.runs", {"symfonic.run.outcome": "abandoned"}) == 3


# --- the attribute cache: keys that differ only in the run's outcome -------------------------


def test_agent_duration_series_follow_each_runs_outcome(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(tenant_id="acme")
    outcomes = ["completed", "error", "completed", "cancelled"]
    for index, outcome in enumerate(outcomes):
        run_id = f"r{index}"
        handler.agent_start(AgentStartEvent("q", run_id))
        handler.agent_end(AgentEndEvent(run_id, "a", 5.0, 1, outcome=outcome))  # type: ignore[arg-type]
    counts = {
        attributes[semconv.RUN_OUTCOME]: point.count
        for attributes, point in telemetry.points(semconv.AGENT_DURATION.name)
    }
    assert counts == {"completed": 2, "error": 1, "cancelled": 1}
    runs = {
        attributes[semconv.RUN_OUTCOME]: value
        for attributes, value in telemetry.points(semconv.AGENT_RUNS.name)
    }
    assert runs == {"completed": 2, "error": 1, "cancelled": 1}


# --- the reference loop: a stream closed after its final item completed ----------------------


async def test_stream_closed_right_after_its_final_item_is_a_completed_run() -> None:
    recorder = Recorder()
    model = ScriptedChatModel([turn("All done.", finish="stop")])
    stream = ReactAgent(model, TOOLS, callbacks=[recorder]).stream("q")
    async for event in stream:
        if isinstance(event, StreamFinal):
            break  # the consumer stops at the final item, as a UI does
    await stream.aclose()
    [end] = recorder.of("agent_end")
    assert (end.outcome, end.final_response) == ("completed", "All done.")


async def test_stream_closed_before_its_final_item_is_cancelled() -> None:
    recorder = Recorder()
    model = ScriptedChatModel([turn("All done, in pieces.", finish="stop")], chunk_size=4)
    stream = ReactAgent(model, TOOLS, callbacks=[recorder]).stream("q")
    async for event in stream:
        assert not isinstance(event, StreamFinal)
        break
    await stream.aclose()
    [end] = recorder.of("agent_end")
    assert (end.outcome, end.final_response) == ("cancelled", None)
