"""An agent span wrapping exactly one invocation and making no model call of its own is that
same run (OpenLLMetry's ``invoke_agent`` around its ``workflow``): the run is counted once,
and the span its exemplars name is the wrapper, the outermost span of the invocation."""

from __future__ import annotations

from typing import Any

import pytest

from symfonic_otel import semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.span_peer import AGENT, Peer, chat


@pytest.fixture
def peer(telemetry: InMemoryTelemetry) -> Peer:
    return Peer(telemetry)


def _exemplars(metrics: dict[str, Any], name: str) -> list[tuple[int, int]]:
    return [
        (exemplar.trace_id, exemplar.span_id)
        for point in metrics[name].data.data_points
        for exemplar in point.exemplars
    ]


def test_a_wrapped_bailing_run_names_its_wrapper_in_its_exemplars(peer: Peer) -> None:
    with peer.span("invoke_agent", AGENT) as wrapper, peer.span("invoke_agent", AGENT):
        peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)}))
    context = wrapper.get_span_context()
    run = (context.trace_id, context.span_id)
    metrics = peer.memory.metrics()
    assert peer.memory.value(semconv.AGENT_RUNS.name) == 1
    assert _exemplars(metrics, semconv.SILENT_BAILS.name) == [run]
    assert _exemplars(metrics, semconv.AGENT_DURATION.name) == [run]
