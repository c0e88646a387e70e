"""A run wrapped by a second agent span (one invocation, two spans) failed when either span
says so: the inner invocation's error is not undone by a wrapper that recorded none, and a
wrapper's error counts though the inner span ended well."""

from __future__ import annotations

import pytest
from opentelemetry.trace import Span, Status, StatusCode

from symfonic_otel import semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.span_peer import AGENT, Peer, chat


@pytest.fixture
def peer(telemetry: InMemoryTelemetry) -> Peer:
    return Peer(telemetry)


def _fail(span: Span) -> None:
    span.set_attribute(semconv.ERROR_TYPE, "ConnectionError")
    span.set_status(Status(StatusCode.ERROR))


@pytest.mark.parametrize("failing", ["inner", "wrapper"])
def test_a_wrapped_run_failed_when_either_of_its_spans_failed(peer: Peer, failing: str) -> None:
    with peer.span("invoke_agent", AGENT) as wrapper:
        with peer.span("invoke_agent", AGENT) as inner:
            peer.span_once("chat", chat())
            if failing == "inner":
                _fail(inner)
        if failing == "wrapper":
            _fail(wrapper)
    assert peer.memory.value(semconv.AGENT_RUNS.name) == 1
    assert peer.memory.value(semconv.AGENT_RUNS.name, {semconv.RUN_OUTCOME: "error"}) == 1
