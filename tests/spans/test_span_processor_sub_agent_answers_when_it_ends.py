"""A sub-agent's answer stands for one call of its parent at the time the sub-agent ended, not
when it started: a parent whose own model call ended while the sub-agent was still working,
asking for tools, then got the sub-agent's answer, relayed an answer and did not bail."""

from __future__ import annotations

import pytest
from opentelemetry import trace

from symfonic_otel import semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.span_peer import AGENT, Peer, chat

RUNS = semconv.AGENT_RUNS.name
BAILS = semconv.SILENT_BAILS.name
TICK = 1_000_000_000


@pytest.fixture
def peer(telemetry: InMemoryTelemetry) -> Peer:
    return Peer(telemetry)


def test_a_sub_agent_answering_after_its_parent_s_call_is_the_parent_s_last_word(
    peer: Peer,
) -> None:
    tracer = peer.tracer
    parent = tracer.start_span("invoke_agent boss", attributes=AGENT, start_time=TICK)
    inside_parent = trace.set_span_in_context(parent)
    sub = tracer.start_span(
        "invoke_agent helper", inside_parent, attributes=AGENT, start_time=TICK + 10
    )
    answer = tracer.start_span(
        "chat",
        trace.set_span_in_context(sub),
        attributes=chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}),
        start_time=TICK + 11,
    )
    answer.end(end_time=TICK + 12)
    asking = tracer.start_span(
        "chat",
        inside_parent,
        attributes=chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)}),
        start_time=TICK + 13,
    )
    asking.end(end_time=TICK + 15)
    sub.end(end_time=TICK + 20)
    parent.end(end_time=TICK + 30)
    assert peer.memory.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 2
    assert peer.memory.value(BAILS) == 0
