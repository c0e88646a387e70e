"""How the span processor cuts spans into agent invocations, on spans shaped as the GenAI
conventions name them (a real SDK tracer provider; the real instrumentations' shapes are in
``test_span_processor_peers`` and ``test_span_processor_runs``).

A sub-agent's step-cap error seen again on the runs around it counts once; a parent that ends
on its capped sub-agent relays no answer; a wrapper span is the same invocation; runs held under
one open span are bounded (at the bound and one past); the agent-name series stay within the
series budget.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Status, StatusCode

from symfonic_otel import semconv
from symfonic_otel.emit.budget import agent_label_values, cardinality_view, series_budget
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.spans.traces import MAX_PENDING_RUNS
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.metric_budget import metrics_within_budget
from tests.support.span_peer import AGENT as PEER_AGENT
from tests.support.span_peer import CAP, Peer, chat

TEXT = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}])
AGENT = semconv.GEN_AI_AGENT_NAME


class Spans:
    def __init__(self, telemetry: InMemoryTelemetry) -> None:
        self.memory = telemetry
        self.processor = SilentBailSpanProcessor(meter_provider=telemetry.meter_provider)
        telemetry.tracer_provider.add_span_processor(self.processor)
        self.tracer = telemetry.tracer_provider.get_tracer("peer")

    @contextmanager
    def agent(self, name: str | None = None, **extra: Any) -> Iterator[trace.Span]:
        attrs: dict[str, Any] = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT, **extra}
        if name is not None:
            attrs[AGENT] = name
        with self.tracer.start_as_current_span(
            "invoke_agent", attributes=attrs, record_exception=False, set_status_on_exception=False
        ) as span:
            yield span

    def chat(self, finish: str) -> None:
        attrs: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
            semconv.GEN_AI_RESPONSE_FINISH_REASONS: (finish,),
        }
        if finish == "stop":
            attrs[semconv.GEN_AI_OUTPUT_MESSAGES] = TEXT
        with self.tracer.start_as_current_span("chat", attributes=attrs):
            pass

    def by_agent(self, metric: str, key: str) -> dict[tuple[str, str], float]:
        found: dict[tuple[str, str], float] = {}
        for attrs, value in self.memory.points(metric):
            assert isinstance(value, int | float)
            pair = (attrs[AGENT], str(attrs.get(key)))
            found[pair] = found.get(pair, 0) + value
        return found


def _capped(span: trace.Span) -> None:
    span.set_attribute(semconv.ERROR_TYPE, "MaxTurnsExceeded")
    span.set_status(Status(StatusCode.ERROR))


@pytest.fixture
def spans(telemetry: InMemoryTelemetry) -> Spans:
    return Spans(telemetry)


def test_a_sub_agents_cap_raised_through_its_parent_counts_once(spans: Spans) -> None:
    with spans.agent("supervisor") as outer:
        spans.chat("tool_calls")
        with spans.agent("researcher") as inner:
            spans.chat("tool_calls")
            _capped(inner)
        _capped(outer)  # the same error on its way up
    assert spans.by_agent(semconv.SILENT_BAILS.name, semconv.REACT_TERMINATION_REASON) == {
        ("researcher", "tool_calls_with_no_text"): 1
    }
    assert spans.by_agent(semconv.AGENT_RUNS.name, semconv.RUN_OUTCOME) == {
        ("researcher", "error"): 1,
        ("supervisor", "error"): 1,
    }
    stops = spans.by_agent(semconv.STOP_REASONS.name, semconv.RUN_STOP_REASON)
    assert stops == {("researcher", "recursion_limit"): 1, ("supervisor", "error"): 1}


def test_a_parent_ending_on_its_capped_sub_agents_message_relays_no_answer(spans: Spans) -> None:
    """The sub-agent ended on tool calls (a cap that answered with a canned message) and its
    parent made no model call after it: both runs are bails."""
    with spans.agent("supervisor"):
        spans.chat("tool_calls")
        with spans.agent("researcher"):
            spans.chat("tool_calls")
    bails = spans.by_agent(semconv.SILENT_BAILS.name, semconv.REACT_TERMINATION_REASON)
    assert bails == {
        ("researcher", "tool_calls_with_no_text"): 1,
        ("supervisor", "tool_calls_with_no_text"): 1,
    }


def test_a_parent_answering_after_its_sub_agent_is_judged_on_its_answer(spans: Spans) -> None:
    with spans.agent("supervisor"):
        spans.chat("tool_calls")
        with spans.agent("researcher"):
            spans.chat("tool_calls")
        spans.chat("stop")
    bails = spans.by_agent(semconv.SILENT_BAILS.name, semconv.REACT_TERMINATION_REASON)
    assert bails == {("researcher", "tool_calls_with_no_text"): 1}
    runs = spans.by_agent(semconv.AGENT_RUNS.name, semconv.RESPONSE_EMPTY)
    assert runs == {("researcher", "True"): 1, ("supervisor", "False"): 1}


def test_a_span_wrapping_one_invocation_is_that_invocation(spans: Spans) -> None:
    with spans.agent(), spans.agent("researcher", **{semconv.TRACELOOP_SPAN_KIND: "workflow"}):
        spans.chat("stop")
    assert spans.by_agent(semconv.AGENT_RUNS.name, semconv.RUN_OUTCOME) == {
        ("researcher", "completed"): 1
    }


def test_runs_held_under_one_open_span_at_the_bound_and_one_past(spans: Spans) -> None:
    root = spans.tracer.start_span("POST /batch")
    with trace.use_span(root, end_on_exit=False):
        for _ in range(MAX_PENDING_RUNS):
            with spans.agent("worker"):
                spans.chat("stop")
        assert spans.memory.value(semconv.AGENT_RUNS.name) == 0  # held until the root ends
        with spans.agent("worker"):
            spans.chat("tool_calls")
        assert spans.memory.value(semconv.AGENT_RUNS.name) == 1  # the oldest, counted early
    root.end()
    assert spans.memory.value(semconv.AGENT_RUNS.name) == MAX_PENDING_RUNS + 1
    assert spans.memory.value(semconv.SILENT_BAILS.name) == 1
    assert spans.processor.open_traces == 0


def test_agent_names_and_tenants_stay_within_the_series_budget() -> None:
    """A flood of agent names and tenants, with the SDK limit set to the budget the processor
    declares: no SDK overflow series, every instrument within its budget."""
    max_tenants = 3
    budget = series_budget(max_tenants, agent_names=agent_label_values())
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader], views=[cardinality_view(max(budget.values()))])
    tracer_provider = TracerProvider()
    processor = SilentBailSpanProcessor(meter_provider=meters, max_tenants=max_tenants)
    tracer_provider.add_span_processor(processor)
    tracer = tracer_provider.get_tracer("peer")
    for index in range(40):
        attrs = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT,
            AGENT: f"agent-{index}",
            semconv.TENANT_ID: f"t{index % 7}",
        }
        with tracer.start_as_current_span("invoke_agent", attributes=attrs):
            finish = ("stop", "tool_calls", "length", f"odd-{index}")[index % 4]
            chat = {
                semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
                semconv.GEN_AI_RESPONSE_FINISH_REASONS: (finish,),
            }
            with tracer.start_as_current_span("chat", attributes=chat):
                pass
    names: set[str] = set()
    for _, attributes in metrics_within_budget(reader.get_metrics_data(), budget):
        names |= {a[AGENT] for a in attributes if AGENT in a}
    assert len(names) == 16 + 1  # the first 16 names and _OTHER
    assert semconv.OTHER_VALUE in names
    meters.shutdown()


def test_a_step_cap_on_an_early_node_caps_the_run_whatever_ends_after_it(
    telemetry: InMemoryTelemetry,
) -> None:
    """A foreign run whose recursion error sits on its first node span, a sibling node ending
    after it without one: the run is still capped (one bail, stop reason ``recursion_limit``)."""
    peer = Peer(telemetry)
    turn = chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)})
    with peer.span("invoke_agent", PEER_AGENT):
        with peer.span("node", CAP):
            peer.span_once("chat", turn)
        with peer.span("node", {}):  # hands up a call of its own, and no cap
            peer.span_once("chat", turn)
    assert peer.verdict() == ("tool_calls_with_no_text", "recursion_limit", None)
    assert peer.value(semconv.SILENT_BAILS) == 1
    assert peer.value(semconv.AGENT_RUNS, **{semconv.RUN_OUTCOME: "error"}) == 1
