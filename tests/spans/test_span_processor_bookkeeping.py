"""What the span processor keeps between spans, and what it answers the SDK and retention.

Outcome retention asks whether the processor still owes a verdict on a trace
(``awaits_root``): from its local root's start to its end, for at most ``max_traces`` roots.
Ended spans are remembered, by id, four per open span allowed, so that a repeat is no second
run; past that bound the oldest is forgotten. Spans that read as nothing hold no place. A span
the SDK hands over without a context is ignored; a run whose recording fails is a counted and
logged loss that spares the runs beside it; a flush has nothing to wait for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from structlog.testing import capture_logs

from symfonic_otel import semconv
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.spans.traces import MAX_PENDING_RUNS
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.span_peer import AGENT, WORKFLOW, Peer, chat

RUNS = semconv.AGENT_RUNS.name
STOP = chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)})


@pytest.fixture
def peer(telemetry: InMemoryTelemetry) -> Peer:
    return Peer(telemetry)


# --- the roots retention waits for ---------------------------------------------------------


@pytest.mark.parametrize(
    ("attributes", "call"),
    [(AGENT, True), ({}, True), ({}, False)],
    ids=["agent-root", "plain-root", "plain-root-alone"],
)
def test_a_local_root_is_awaited_from_its_start_until_it_ends(
    peer: Peer, attributes: dict[str, Any], call: bool
) -> None:
    with peer.span("request", attributes) as root:
        trace_id = root.get_span_context().trace_id
        assert peer.processor.awaits_root(trace_id)
        if call:
            peer.span_once("chat", STOP)
            assert peer.processor.awaits_root(trace_id)  # a child ending is no verdict
    assert not peer.processor.awaits_root(trace_id)


def test_a_root_under_a_remote_parent_is_awaited_too(peer: Peer) -> None:
    remote = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    with peer.tracer.start_as_current_span(
        "request", context=trace.set_span_in_context(NonRecordingSpan(remote))
    ):
        assert peer.processor.awaits_root(0xABC)
    assert not peer.processor.awaits_root(0xABC)


def test_a_span_under_a_local_parent_started_elsewhere_is_no_root_awaited(peer: Peer) -> None:
    """The application's request span comes from another provider (in the same process, so
    not remote): this processor never sees that root start or end, and waits for no verdict
    on its trace because of the spans it does see under it."""
    other = TracerProvider()
    with other.get_tracer("app").start_as_current_span("request") as request:
        trace_id = request.get_span_context().trace_id
        with peer.span("invoke_agent", AGENT):
            assert not peer.processor.awaits_root(trace_id)
            peer.span_once("chat", STOP)
    assert not peer.processor.awaits_root(trace_id)
    other.shutdown()


@pytest.mark.parametrize("attributes", [AGENT, {}], ids=["agent-roots", "plain-roots"])
def test_roots_awaited_at_max_traces_and_one_past_it(
    telemetry: InMemoryTelemetry, attributes: dict[str, Any]
) -> None:
    """The oldest root forgotten past the bound still ends (and counts its run) without loss."""
    peer = Peer(telemetry, max_traces=2)
    roots = [peer.tracer.start_span(f"request {i}", attributes=attributes) for i in range(2)]
    ids = [root.get_span_context().trace_id for root in roots]
    assert [peer.processor.awaits_root(i) for i in ids] == [True, True]
    roots.append(peer.tracer.start_span("request 2", attributes=attributes))
    ids.append(roots[-1].get_span_context().trace_id)
    assert [peer.processor.awaits_root(i) for i in ids] == [False, True, True]
    for root in roots:
        root.end()
    assert peer.memory.value(RUNS) == (3 if attributes else 0)
    assert peer.memory.value(semconv.DROPPED_EVENTS.name) == 0


def test_a_root_ending_after_its_runs_were_counted_is_awaited_no_more(
    telemetry: InMemoryTelemetry,
) -> None:
    """``max_traces=2``: a run under the second request's open graph span, then one beside
    it, evict (and count) the first request's run while its root is open; that root ending
    later is a verdict given, not a new run."""
    peer = Peer(telemetry, max_traces=2)
    first = peer.tracer.start_span("request 0")
    with trace.use_span(first, end_on_exit=False):
        peer.agent_run(STOP)
    second = peer.tracer.start_span("request 1")
    with trace.use_span(second, end_on_exit=False):
        graph = peer.tracer.start_span("graph")
    with trace.use_span(graph, end_on_exit=False):
        peer.agent_run(STOP)
    with trace.use_span(second, end_on_exit=False):
        peer.agent_run(STOP)
    assert peer.memory.value(RUNS) == 1
    assert peer.processor.awaits_root(first.get_span_context().trace_id)
    first.end()
    assert not peer.processor.awaits_root(first.get_span_context().trace_id)
    assert peer.memory.value(RUNS) == 1
    graph.end()
    second.end()
    assert peer.memory.value(RUNS) == 3


def test_sub_runs_past_the_bound_under_one_open_span_are_counted_early_oldest_first(
    peer: Peer,
) -> None:
    """A workflow of ``MAX_PENDING_RUNS`` sub-agents, then one more run, under one open
    request: two runs past the bound, the two oldest sub-agents, counted before the request
    ends; the rest when it does."""
    root = peer.tracer.start_span("POST /batch")
    with trace.use_span(root, end_on_exit=False):
        with peer.span("workflow", WORKFLOW):
            for _ in range(MAX_PENDING_RUNS):
                peer.agent_run(STOP, {semconv.GEN_AI_AGENT_NAME: "worker"})
        assert peer.memory.value(RUNS) == 0
        peer.agent_run(STOP)
        assert peer.memory.value(RUNS) == 2
        assert peer.memory.value(RUNS, {semconv.GEN_AI_AGENT_NAME: "worker"}) == 2
    root.end()
    assert peer.memory.value(RUNS) == MAX_PENDING_RUNS + 2
    assert peer.processor.open_traces == 0


def test_spans_that_read_as_nothing_hold_no_place_among_the_open_spans(
    telemetry: InMemoryTelemetry,
) -> None:
    """``max_traces=1``: a run waits under the first request; under a second, spans that are no
    run, no model call, and name no tenant and no step cap end: they take no slot, so the run
    is not counted early."""
    peer = Peer(telemetry, max_traces=1)
    first = peer.tracer.start_span("request 0")
    with trace.use_span(first, end_on_exit=False):
        peer.agent_run(STOP)
    with peer.span("request 1", {}), peer.span("handler", {}):
        peer.span_once("database", {})
        assert peer.processor.open_traces == 1
    assert peer.memory.value(RUNS) == 0
    first.end()
    assert peer.memory.value(RUNS) == 1


# --- ended spans remembered ----------------------------------------------------------------


def _recorded_run() -> list[ReadableSpan]:
    """The ended spans of one agent run with one model call: the call, then the agent root."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("peer-instrumentation")
    with (
        tracer.start_as_current_span("invoke_agent", attributes=AGENT),
        tracer.start_as_current_span("chat", attributes=STOP),
    ):
        pass
    for _ in range(4):  # lone model calls: each a root of its own that reads as something
        with tracer.start_as_current_span("chat", attributes=STOP):
            pass
    provider.shutdown()
    return list(exporter.get_finished_spans())


@pytest.mark.parametrize(("later", "runs"), [(3, 1), (4, 2)])
def test_ended_spans_are_remembered_four_per_open_span_then_the_oldest_forgotten(
    telemetry: InMemoryTelemetry, later: int, runs: int
) -> None:
    """``max_traces=1``: four ended spans remembered. The run's two spans, then ``later``
    other spans: its agent span delivered again is a repeat while remembered; once forgotten,
    it reads as a new run (the memory stays bounded, the price is that recount)."""
    processor = SilentBailSpanProcessor(meter_provider=telemetry.meter_provider, max_traces=1)
    call, agent, *others = _recorded_run()
    for span in (call, agent, *others[:later]):
        processor.on_end(span)
    assert telemetry.value(RUNS) == 1
    processor.on_end(agent)
    assert telemetry.value(RUNS) == runs
    assert processor.open_traces == 0
    assert telemetry.value(semconv.DROPPED_EVENTS.name) == 0


# --- what the SDK hands over, what it asks -------------------------------------------------


def test_a_span_without_a_context_is_ignored(peer: Peer) -> None:
    peer.processor.on_end(ReadableSpan("no context", attributes=dict(AGENT)))
    assert peer.memory.value(RUNS) == 0
    assert peer.memory.value(semconv.DROPPED_EVENTS.name) == 0
    assert peer.processor.open_traces == 0


def test_a_flush_has_nothing_to_wait_for_and_succeeds(peer: Peer) -> None:
    assert peer.processor.force_flush() is True
    assert peer.processor.force_flush(0) is True


def test_a_run_that_fails_to_record_is_a_loss_and_the_runs_beside_it_still_count(
    peer: Peer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sub-agents judged at one root: recording the first fails (once), the second and the
    root's own run are counted, and the failure is one ``span_end`` loss."""
    emitter = peer.processor._metrics
    record: Callable[..., None] = emitter.run_ended
    failures = [RuntimeError("boom")]

    def fails_once(*args: Any, **kwargs: Any) -> None:
        if failures:
            raise failures.pop()
        record(*args, **kwargs)

    monkeypatch.setattr(emitter, "run_ended", fails_once)
    with capture_logs() as logs, peer.span("supervisor", AGENT):
        peer.agent_run(STOP)
        peer.agent_run(STOP)
        peer.span_once("chat", STOP)
    assert peer.memory.value(RUNS) == 2
    [failure] = [entry for entry in logs if entry["event"] == "symfonic_otel.internal_failure"]
    assert (failure["kind"], failure["error_type"]) == ("span_processor", "RuntimeError")
    drops = {
        semconv.TELEMETRY_EVENT: "span_end",
        semconv.TELEMETRY_DROP_REASON: "internal_error",
    }
    assert peer.memory.value(semconv.DROPPED_EVENTS.name, drops) == 1
