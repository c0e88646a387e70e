"""What reaches the span processor's count, and its word to outcome retention.

A span that is no run and no model call still matters when it names the tenant or records a
step cap, even as a leaf. A counted run goes through the active-runs gauge and back, and seeds
its tenant's series at zero. Runs in a trace holding this package's own spans are left to its
handler: whichever span ends first, when counted early past the pending bound, and at shutdown.
Retention hears a verdict on every local root: a trace with no run is no reason to keep it, a
run judged before its root ended (the table's bounds) keeps its trace, and so does a run that
stopped on a recursion limit or a detected loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from symfonic_otel import OutcomeRetentionSpanProcessor, semconv
from symfonic_otel._version import __version__
from symfonic_otel.spans.traces import MAX_PENDING_RUNS
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.span_peer import AGENT, CAP, Peer, chat

ANSWER = chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)})
TOOL_TURN = chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)})
RUNS = semconv.AGENT_RUNS.name


@pytest.fixture
def peer(telemetry: InMemoryTelemetry) -> Peer:
    return Peer(telemetry)


# --- leaf spans that are no run and no call ------------------------------------------------


def test_a_leaf_span_recording_a_step_cap_caps_the_run(peer: Peer) -> None:
    with peer.span("invoke_agent", AGENT):
        peer.span_once("chat", ANSWER)
        peer.span_once("node", CAP)
    assert peer.verdict() == ("tool_calls_with_no_text", "recursion_limit", None)


def test_a_leaf_span_naming_the_tenant_names_the_runs_tenant(peer: Peer) -> None:
    with peer.span("invoke_agent", AGENT):
        peer.span_once("chat", ANSWER)
        peer.span_once("http request", {semconv.TENANT_ID: "acme"})
    assert peer.value(semconv.AGENT_RUNS, **{semconv.TENANT_ID: "acme"}) == 1


# --- what a counted run records ------------------------------------------------------------


def test_a_counted_run_leaves_no_active_run_behind(peer: Peer) -> None:
    peer.agent_run(ANSWER)
    [(_, active)] = peer.memory.points(semconv.ACTIVE_RUNS.name)
    assert active == 0


def test_a_counted_runs_metrics_come_under_this_packages_scope_and_version(peer: Peer) -> None:
    peer.agent_run(ANSWER)
    data = peer.memory.reader.get_metrics_data()
    assert data is not None
    scopes = {
        metric.name: (scope.scope.name, scope.scope.version)
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
    assert {RUNS, semconv.AGENT_DURATION.name, semconv.ACTIVE_RUNS.name} <= scopes.keys()
    assert set(scopes.values()) == {(semconv.SCOPE_NAME, __version__)}


def test_a_tenants_first_run_seeds_its_bail_series_at_zero(peer: Peer) -> None:
    peer.agent_run(ANSWER, {semconv.TENANT_ID: "acme"})
    seeded = {
        (attrs[semconv.TENANT_ID], attrs[semconv.REACT_TERMINATION_REASON]): value
        for attrs, value in peer.memory.points(semconv.SILENT_BAILS.name, include_zeros=True)
    }
    assert seeded == {
        ("acme", "tool_calls_with_no_text"): 0,
        ("acme", "no_content_no_tool_calls"): 0,
    }


def test_at_shutdown_runs_in_our_own_spans_are_left_and_the_others_counted(
    peer: Peer,
) -> None:
    """Two requests still open: the first holds a span of this package's own tracer (its
    handler counts the runs inside it), the second a foreign run. Shutdown counts the foreign
    run only."""
    ours = peer.memory.tracer_provider.get_tracer(semconv.SCOPE_NAME)
    roots = [peer.tracer.start_span(f"request {i}") for i in range(2)]
    with trace.use_span(roots[0], end_on_exit=False), ours.start_as_current_span("agent run"):
        peer.agent_run(TOOL_TURN)
    with trace.use_span(roots[1], end_on_exit=False):
        peer.agent_run(TOOL_TURN)
    assert peer.memory.value(RUNS) == 0
    peer.processor.shutdown()
    assert peer.memory.value(RUNS) == 1
    assert peer.value(semconv.SILENT_BAILS) == 1
    for root in roots:
        root.end()


@pytest.mark.parametrize("ours_first", [True, False], ids=["ours-first", "peer-first"])
def test_a_trace_holding_our_own_span_is_left_to_our_handler_whichever_ends_first(
    peer: Peer, ours_first: bool
) -> None:
    """A request whose children are a span of this package's own tracer and a peer's run:
    this package's handler counts that trace's runs, the processor none of them."""
    ours = peer.memory.tracer_provider.get_tracer(semconv.SCOPE_NAME)
    with peer.span("request", {}):
        if ours_first:
            ours.start_span("agent run").end()
        peer.agent_run(TOOL_TURN)
        if not ours_first:
            ours.start_span("agent run").end()
    assert peer.memory.value(RUNS) == 0
    assert peer.value(semconv.SILENT_BAILS) == 0


def test_runs_past_the_bound_in_a_trace_holding_our_own_span_are_left_to_our_handler(
    peer: Peer,
) -> None:
    """``MAX_PENDING_RUNS`` + 1 peer runs under one open request that holds a span of this
    package's own tracer: the oldest, counted early to bound memory, is still its handler's."""
    ours = peer.memory.tracer_provider.get_tracer(semconv.SCOPE_NAME)
    with peer.span("request", {}):
        ours.start_span("agent run").end()
        for _ in range(MAX_PENDING_RUNS + 1):
            peer.agent_run(TOOL_TURN)
        assert peer.memory.value(RUNS) == 0
    assert peer.memory.value(RUNS) == 0
    assert peer.processor.open_traces == 0


# --- the word to outcome retention ---------------------------------------------------------


@pytest.fixture
def kept(telemetry: InMemoryTelemetry) -> Iterator[InMemorySpanExporter]:
    """What outcome retention (healthy traces dropped) exports from ``telemetry``'s provider."""
    exported = InMemorySpanExporter()
    retention = OutcomeRetentionSpanProcessor(
        SimpleSpanProcessor(exported), healthy_trace_ratio=0.0
    )
    telemetry.tracer_provider.add_span_processor(retention)
    yield exported


def test_a_trace_without_a_run_is_not_kept_on_the_processors_word(
    peer: Peer, kept: InMemorySpanExporter
) -> None:
    with peer.span("request", {}):
        peer.span_once("database", {})
    assert kept.get_finished_spans() == ()


def test_a_bailing_run_judged_before_its_root_ends_keeps_its_trace(
    telemetry: InMemoryTelemetry, kept: InMemorySpanExporter
) -> None:
    """``max_traces=1``: the second request's run evicts (and judges) the first's while its
    root is still open; the first, a bail, is kept whole once its root ends."""
    peer = Peer(telemetry, max_traces=1)
    roots = [peer.tracer.start_span(f"request {i}") for i in range(2)]
    for root, call in zip(roots, (TOOL_TURN, ANSWER), strict=True):
        with trace.use_span(root, end_on_exit=False):
            peer.agent_run(call)
    assert peer.value(semconv.SILENT_BAILS) == 1
    for root in roots:
        root.end()
    exported = {span.context.trace_id for span in kept.get_finished_spans()}
    assert exported == {roots[0].get_span_context().trace_id}


def test_at_shutdown_the_trace_of_each_bailing_run_is_kept(
    peer: Peer, kept: InMemorySpanExporter
) -> None:
    """Two requests still open at shutdown, a bail under the first, a healthy run under the
    second: both are counted at once, and the first's trace is kept when its root ends."""
    roots = [peer.tracer.start_span(f"request {i}") for i in range(2)]
    for root, call in zip(roots, (TOOL_TURN, ANSWER), strict=True):
        with trace.use_span(root, end_on_exit=False):
            peer.agent_run(call)
    peer.processor.shutdown()
    assert peer.memory.value(RUNS) == 2
    for root in roots:
        root.end()
    exported = {span.context.trace_id for span in kept.get_finished_spans()}
    assert exported == {roots[0].get_span_context().trace_id}


@pytest.mark.parametrize("finish", ["recursion_limit", "loop_detected"])
def test_a_run_stopped_by_a_recursion_limit_or_a_loop_keeps_its_trace(
    peer: Peer, kept: InMemorySpanExporter, finish: str
) -> None:
    """A peer whose model call reports the stop as its finish reason: no bail, a completed run,
    and a stop reason retention keeps."""
    peer.agent_run(chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: (finish,)}))
    assert peer.verdict() == (None, finish, None)
    assert len(kept.get_finished_spans()) == 2


# --- retention placed before the processor: it waits for the processor's word --------------


class OnEndOnly(SpanProcessor):
    """A user's wrapper that forwards the SDK's public calls and not its private
    ``_on_ending`` hook: the processor inside then reads each span in ``on_end``, after the
    processors placed before the wrapper have seen it."""

    def __init__(self, inner: SpanProcessor) -> None:
        self.inner = inner

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.inner.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        self.inner.on_end(span)


def _retention_first(
    telemetry: InMemoryTelemetry, wrapped: bool, **options: Any
) -> tuple[Peer, InMemorySpanExporter, OutcomeRetentionSpanProcessor]:
    exported = InMemorySpanExporter()
    retention = OutcomeRetentionSpanProcessor(
        SimpleSpanProcessor(exported), healthy_trace_ratio=0.0
    )
    telemetry.tracer_provider.add_span_processor(retention)
    return Peer(telemetry, wrap=OnEndOnly if wrapped else None, **options), exported, retention


WRAPPED = pytest.mark.parametrize("wrapped", [False, True], ids=["installed", "wrapped"])


@WRAPPED
@pytest.mark.parametrize(
    ("call", "exported"),
    [(None, 0), (TOOL_TURN, 3), (ANSWER, 0)],
    ids=["no-run", "bail", "healthy"],
)
def test_retention_before_the_processor_decides_each_trace_as_its_root_ends(
    telemetry: InMemoryTelemetry, call: dict[str, Any] | None, exported: int, wrapped: bool
) -> None:
    """Retention (healthy traces dropped) reaches the root first; the processor's verdict
    comes before retention's turn (installed) or after it (wrapped: retention waits for it):
    either way the trace is decided (a bail exported, the rest dropped) as its root ends, and
    nothing stays held."""
    peer, spans, retention = _retention_first(telemetry, wrapped)
    with peer.span("request", {}):
        if call is None:
            peer.span_once("database", {})
        else:
            peer.agent_run(call)
    assert len(spans.get_finished_spans()) == exported
    assert retention.held_spans == 0


@WRAPPED
@pytest.mark.parametrize(
    ("call", "exported"), [(TOOL_TURN, 3), (ANSWER, 0)], ids=["bail", "healthy"]
)
def test_retention_before_the_processor_decides_a_trace_judged_before_its_root_ended(
    telemetry: InMemoryTelemetry, call: dict[str, Any], exported: int, wrapped: bool
) -> None:
    """``max_traces=2``: the first request's run is judged while its root is open (a run
    under the second request's open graph span, then one beside it, evict it); when that root
    ends, its trace is decided at once: a bail exported, a healthy run dropped."""
    peer, spans, retention = _retention_first(telemetry, wrapped, max_traces=2)
    first = peer.tracer.start_span("request 0")
    with trace.use_span(first, end_on_exit=False):
        peer.agent_run(call)
    second = peer.tracer.start_span("request 1")
    with trace.use_span(second, end_on_exit=False):
        graph = peer.tracer.start_span("graph")
    with trace.use_span(graph, end_on_exit=False):
        peer.agent_run(ANSWER)
    with trace.use_span(second, end_on_exit=False):
        peer.agent_run(ANSWER)
    assert peer.memory.value(RUNS) == 1
    first.end()
    assert len(spans.get_finished_spans()) == exported
    assert retention.held_spans == 4  # the second request's two runs, until its root ends
    graph.end()
    second.end()
    assert len(spans.get_finished_spans()) == exported
    assert retention.held_spans == 0


@pytest.mark.parametrize(("call", "late"), [(TOOL_TURN, 1), (ANSWER, 0)], ids=["bail", "healthy"])
def test_a_bail_judged_at_its_root_after_retention_dropped_its_trace_early_is_a_late_keep(
    telemetry: InMemoryTelemetry, call: dict[str, Any], late: int
) -> None:
    """Retention holds two spans at most: the second request's spans push the first's trace
    out (decided early, dropped) while its root is open. The first run, judged when that root
    ends, is a bail that came too late to keep its trace: one late keep; a healthy run, none."""
    peer = Peer(telemetry)
    retention = OutcomeRetentionSpanProcessor(
        SimpleSpanProcessor(InMemorySpanExporter()),
        healthy_trace_ratio=0.0,
        max_held_spans=2,
        meter_provider=telemetry.meter_provider,
    )
    telemetry.tracer_provider.add_span_processor(retention)
    first = peer.tracer.start_span("request 0")
    with trace.use_span(first, end_on_exit=False):
        peer.agent_run(call)
    with peer.span("request 1", {}):
        peer.agent_run(ANSWER)
    assert telemetry.value(semconv.RETENTION_LATE_KEEPS.name) == 0
    first.end()
    assert telemetry.value(semconv.RETENTION_LATE_KEEPS.name) == late
