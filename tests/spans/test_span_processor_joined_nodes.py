"""Agent nodes joined into one run: what any one node shows is the run's.

OpenInference marks each LangGraph node named "agent" as an ``AGENT`` span; under a graph span
that is no root (an application's request span above it) they are parts of one invocation,
joined into one run. Whichever node failed, hit the step cap (or passed a capped sub-agent's
error up), named the agent or the tenant, or gave the last (blank) answer, the joined run
carries it; here the later node does, so that nothing is read off the earliest node alone.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import Status, StatusCode
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.span_peer import AGENT, CAP, Peer, chat

ANSWER = chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)})
NODE: dict[str, AttributeValue] = {
    semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_KIND_AGENT
}
GRAPH: dict[str, AttributeValue] = {
    semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_KIND_CHAIN
}


@pytest.fixture
def peer(telemetry: InMemoryTelemetry) -> Peer:
    return Peer(telemetry)


def _graph(peer: Peer, later: dict[str, AttributeValue], failed: bool = False) -> None:
    """A request span around a graph of two agent nodes; the later one with ``later``."""
    with peer.span("POST /chat", {}), peer.span("LangGraph", GRAPH):
        with peer.span("agent", NODE):
            peer.span_once("chat", ANSWER)
        with peer.span("agent", {**NODE, **later}) as node:
            peer.span_once("chat", ANSWER)
            if failed:
                node.set_status(Status(StatusCode.ERROR))


def test_two_nodes_are_one_run(peer: Peer) -> None:
    _graph(peer, {})
    assert peer.verdict() == (None, "end_turn", None)
    [(_, iterations)] = peer.memory.points(semconv.REACT_ITERATIONS.name)
    assert getattr(iterations, "sum", None) == 2


def test_a_later_node_failing_fails_the_run(peer: Peer) -> None:
    _graph(peer, {}, failed=True)
    assert peer.verdict() == (None, "error", None)
    assert peer.value(semconv.AGENT_RUNS, **{semconv.RUN_OUTCOME: "error"}) == 1


def test_a_later_node_hitting_the_step_cap_caps_the_run(peer: Peer) -> None:
    _graph(peer, CAP)
    assert peer.verdict() == ("tool_calls_with_no_text", "recursion_limit", None)


@pytest.mark.parametrize(
    ("later", "where"),
    [
        ({semconv.GEN_AI_AGENT_NAME: "planner"}, {semconv.GEN_AI_AGENT_NAME: "planner"}),
        ({semconv.TENANT_ID: "acme"}, {semconv.TENANT_ID: "acme"}),
    ],
    ids=["agent-name", "tenant"],
)
def test_a_later_node_naming_the_agent_or_the_tenant_labels_the_run(
    peer: Peer, later: dict[str, AttributeValue], where: dict[str, Any]
) -> None:
    _graph(peer, later)
    assert peer.value(semconv.AGENT_RUNS, **where) == 1
    assert peer.value(semconv.AGENT_RUNS) == 1


def test_a_later_nodes_blank_answer_is_the_runs_answer(peer: Peer) -> None:
    blank = {
        semconv.OPENINFERENCE_OUTPUT_VALUE: " ",
        semconv.OPENINFERENCE_OUTPUT_MIME_TYPE: "text/plain",
    }
    _graph(peer, blank)
    assert peer.verdict() == ("no_content_no_tool_calls", "end_turn", True)


@pytest.mark.parametrize("around", [{}, {**AGENT, **CAP}], ids=["request", "agent-seeing-it"])
def test_a_capped_sub_agent_in_a_later_node_is_one_bail_and_the_run_around_it_an_error(
    peer: Peer, around: dict[str, AttributeValue]
) -> None:
    """The later node calls a sub-agent that hits the step cap; the cap's error passes up
    through the node (and, in the second case, an ``invoke_agent`` span around the graph,
    which the joined nodes are part of). The sub-agent is the one bail; the run the nodes
    belong to is an error run, not a second bail."""
    graph = {**GRAPH, **CAP}
    with peer.span("POST /chat", {}), peer.span("outer", around), peer.span("LangGraph", graph):
        with peer.span("agent", NODE):
            peer.span_once("chat", ANSWER)
        with peer.span("agent", {**NODE, **CAP}):
            with peer.span("invoke_agent", {**AGENT, **CAP}):
                peer.span_once("chat", ANSWER)
            peer.span_once("chat", ANSWER)
    assert peer.value(semconv.AGENT_RUNS, **{semconv.RUN_OUTCOME: "error"}) == 2
    assert peer.value(semconv.SILENT_BAILS) == 1
    stops = {
        attrs[semconv.RUN_STOP_REASON]: value
        for attrs, value in peer.memory.points(semconv.STOP_REASONS.name)
        if value
    }
    assert stops == {"recursion_limit": 1, "error": 1}


def test_the_earliest_nodes_agent_name_labels_the_run(peer: Peer) -> None:
    with peer.span("POST /chat", {}), peer.span("LangGraph", GRAPH):
        for name in ("planner", "writer"):
            with peer.span("agent", {**NODE, semconv.GEN_AI_AGENT_NAME: name}):
                peer.span_once("chat", ANSWER)
    [(attrs, _)] = peer.memory.points(semconv.AGENT_RUNS.name)
    assert attrs[semconv.GEN_AI_AGENT_NAME] == "planner"


def test_the_joined_run_lasts_from_the_first_nodes_start_to_the_last_nodes_end(
    peer: Peer,
) -> None:
    _graph(peer, {})
    nodes = [span for span in peer.memory.spans() if span.name == "agent"]
    start = min(span.start_time or 0 for span in nodes)
    end = max(span.end_time or 0 for span in nodes)
    [(_, duration)] = peer.memory.points(semconv.AGENT_DURATION.name)
    assert getattr(duration, "sum", None) == pytest.approx((end - start) / 1e9)


# --- a span wrapping one invocation --------------------------------------------------------


def test_a_wrapper_and_its_invocation_are_one_run_named_by_the_invocation_lasting_the_wrapper(
    peer: Peer,
) -> None:
    """OpenLLMetry's ``invoke_agent`` span around the one invocation it runs: one run, the
    invocation's own agent name first, lasting from the wrapper's start to its end."""
    with peer.span("invoke_agent outer", {**AGENT, semconv.GEN_AI_AGENT_NAME: "outer"}):
        peer.agent_run(ANSWER, {semconv.GEN_AI_AGENT_NAME: "inner"})
    [(attrs, _)] = peer.memory.points(semconv.AGENT_RUNS.name)
    assert attrs[semconv.GEN_AI_AGENT_NAME] == "inner"
    [wrapper] = [span for span in peer.memory.spans() if span.name == "invoke_agent outer"]
    [(_, duration)] = peer.memory.points(semconv.AGENT_DURATION.name)
    expected = ((wrapper.end_time or 0) - (wrapper.start_time or 0)) / 1e9
    assert getattr(duration, "sum", None) == pytest.approx(expected)
