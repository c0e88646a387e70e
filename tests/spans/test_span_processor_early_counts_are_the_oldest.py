"""Sub-agents past the bound under one open span are counted early, and the ones counted are
the oldest, each exactly once: a workflow whose first sub-agent bailed reports that bail as
soon as the bound is passed, and the rest when the request ends."""

from __future__ import annotations

import pytest
from opentelemetry import trace

from symfonic_otel import semconv
from symfonic_otel.spans.traces import MAX_PENDING_RUNS
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.span_peer import WORKFLOW, Peer, chat

RUNS = semconv.AGENT_RUNS.name
BAILS = semconv.SILENT_BAILS.name
STOP = chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)})
STILL_CALLING = chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)})


@pytest.fixture
def peer(telemetry: InMemoryTelemetry) -> Peer:
    return Peer(telemetry)


def test_the_sub_agent_counted_early_is_the_oldest_and_is_counted_once(peer: Peer) -> None:
    root = peer.tracer.start_span("POST /batch")
    with trace.use_span(root, end_on_exit=False):
        with peer.span("workflow", WORKFLOW):
            peer.agent_run(STILL_CALLING, {semconv.GEN_AI_AGENT_NAME: "first"})
            for _ in range(MAX_PENDING_RUNS - 1):
                peer.agent_run(STOP, {semconv.GEN_AI_AGENT_NAME: "worker"})
        assert peer.memory.value(RUNS) == 0
        peer.agent_run(STOP)
        assert peer.memory.value(RUNS, {semconv.GEN_AI_AGENT_NAME: "first"}) == 1
        assert peer.memory.value(BAILS) == 1  # the oldest's bail, reported before the root ends
    root.end()
    assert peer.memory.value(RUNS, {semconv.GEN_AI_AGENT_NAME: "first"}) == 1
    assert peer.memory.value(RUNS, {semconv.GEN_AI_AGENT_NAME: "worker"}) == MAX_PENDING_RUNS - 1
    assert peer.memory.value(RUNS) == MAX_PENDING_RUNS + 2
    assert peer.memory.value(BAILS) == 1
