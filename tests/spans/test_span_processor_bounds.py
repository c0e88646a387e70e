"""The span processor's own guarantees, on spans written as the GenAI conventions name them.

A real SDK tracer provider carries the processor; the spans come from a tracer of another
scope, shaped the way instrumentations shape theirs (checked against the real ones in
``test_span_processor_peers``). Here: when a trace is judged, bounded state (count and age, at
the limit and one past), late and duplicate spans, our own spans, malformed values, tenants,
privacy, option errors, and the lazy export.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics.export import HistogramDataPoint
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.spans.reading import MAX_JSON_CHARS
from symfonic_otel.testing.telemetry import InMemoryTelemetry

PEER = "peer-instrumentation"
TOOL_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "name": "add"}]}])
TEXT_TURN = json.dumps(
    [{"role": "assistant", "parts": [{"type": "text", "content": "secret answer text"}]}]
)
BLANK_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": " "}]}])
HIDDEN_TEXT_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "text"}]}])


class Peer:
    """Another instrumentation's tracer, on the provider the processor is installed on."""

    def __init__(self, memory: InMemoryTelemetry, **options: Any) -> None:
        self.memory = memory
        self.processor = SilentBailSpanProcessor(meter_provider=memory.meter_provider, **options)
        memory.tracer_provider.add_span_processor(self.processor)
        self.tracer = memory.tracer_provider.get_tracer(PEER)

    @contextmanager
    def agent(
        self, attributes: Mapping[str, AttributeValue] | None = None, **kwargs: Any
    ) -> Iterator[trace.Span]:
        attrs = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT, **(attributes or {})}
        with self.tracer.start_as_current_span(
            "invoke_agent peer", attributes=attrs, **kwargs
        ) as s:
            yield s

    def chat(self, finish: str | None = None, output: str | None = None, **extra: Any) -> None:
        attrs: dict[str, AttributeValue] = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT}
        if finish is not None:
            attrs[semconv.GEN_AI_RESPONSE_FINISH_REASONS] = (finish,)
        if output is not None:
            attrs[semconv.GEN_AI_OUTPUT_MESSAGES] = output
        attrs.update(extra)
        with self.tracer.start_as_current_span("chat peer-model", attributes=attrs):
            pass

    def run(self, *turns: tuple[str | None, str | None], tenant: str | None = None) -> None:
        with self.agent({semconv.TENANT_ID: tenant} if tenant else None):
            for finish, output in turns:
                self.chat(finish, output)

    def total(self, spec: semconv.InstrumentSpec, **where: Any) -> float:
        return self.memory.value(spec.name, where or None)


@pytest.fixture
def peer(telemetry: InMemoryTelemetry) -> Peer:
    return Peer(telemetry)


def bails(peer: Peer, reason: str | None = None) -> float:
    where = {semconv.REACT_TERMINATION_REASON: reason} if reason else {}
    return peer.total(semconv.SILENT_BAILS, **where)


# --- verdicts ------------------------------------------------------------------------------


def test_a_run_ending_on_a_tool_call_turn_is_a_bail_only_once_its_root_ends(peer: Peer) -> None:
    with peer.agent({semconv.TENANT_ID: "globex"}):
        peer.chat("tool_calls")
        assert peer.total(semconv.AGENT_RUNS) == 0  # nothing is judged before the root ends
    assert bails(peer, "tool_calls_with_no_text") == 1
    assert peer.total(semconv.STOP_REASONS, **{semconv.RUN_STOP_REASON: "recursion_limit"}) == 1
    assert peer.total(semconv.AGENT_RUNS, **{semconv.RESPONSE_EMPTY: True}) == 1


def test_a_text_turn_after_the_tool_calls_is_an_answer(peer: Peer) -> None:
    peer.run(("tool_calls", TOOL_TURN), ("stop", TEXT_TURN))
    assert bails(peer) == 0
    assert peer.total(semconv.AGENT_RUNS, **{semconv.RESPONSE_EMPTY: False}) == 1
    assert peer.total(semconv.STOP_REASONS, **{semconv.RUN_STOP_REASON: "end_turn"}) == 1


def test_recorded_tool_calls_decide_when_the_finish_reason_says_stop(peer: Peer) -> None:
    """Gemini reports STOP on function-call turns: the recorded parts are the better witness."""
    peer.run(("STOP", TOOL_TURN))
    assert bails(peer, "tool_calls_with_no_text") == 1


def test_a_blank_final_turn_is_a_bail_when_recorded_and_unknown_when_hidden(peer: Peer) -> None:
    peer.run(("tool_calls", TOOL_TURN), ("stop", BLANK_TURN))
    assert bails(peer, "no_content_no_tool_calls") == 1
    peer.run(("tool_calls", TOOL_TURN), ("stop", HIDDEN_TEXT_TURN))
    peer.run(("tool_calls", None), ("stop", None))
    assert bails(peer) == 1
    assert peer.total(semconv.AGENT_RUNS) == 3


def test_the_run_spans_recorded_answer_decides_blank_or_not(peer: Peer) -> None:
    with peer.agent({semconv.GEN_AI_OUTPUT_MESSAGES: BLANK_TURN}):
        peer.chat("stop", None)
    with peer.agent({semconv.PYDANTIC_AI_FINAL_RESULT: "42"}):
        peer.chat("stop", BLANK_TURN)
    assert bails(peer, "no_content_no_tool_calls") == 1
    assert peer.total(semconv.AGENT_RUNS) == 2


@pytest.mark.parametrize(
    ("error_type", "where"),
    [
        ("langgraph.errors.GraphRecursionError", "event"),
        ("agents.exceptions.MaxTurnsExceeded", "attribute"),
        ("UsageLimitExceeded", "attribute"),
    ],
)
def test_a_step_cap_error_is_a_bail_with_outcome_error(
    peer: Peer, error_type: str, where: str
) -> None:
    with peer.agent() as span:
        peer.chat("tool_calls")
        if where == "event":
            span.add_event(semconv.EXCEPTION_EVENT, {semconv.EXCEPTION_TYPE: error_type})
        else:
            span.set_attribute(semconv.ERROR_TYPE, error_type)
        span.set_status(Status(StatusCode.ERROR))
    assert bails(peer, "tool_calls_with_no_text") == 1
    assert peer.total(semconv.AGENT_RUNS, **{semconv.RUN_OUTCOME: "error"}) == 1
    assert peer.total(semconv.STOP_REASONS, **{semconv.RUN_STOP_REASON: "recursion_limit"}) == 1


def test_another_error_is_an_error_run_and_no_bail(peer: Peer) -> None:
    with peer.agent() as span:
        peer.chat("tool_calls", TOOL_TURN)
        span.set_attribute(semconv.ERROR_TYPE, "ValueError")
        span.set_status(Status(StatusCode.ERROR))
    assert bails(peer) == 0
    assert peer.total(semconv.STOP_REASONS, **{semconv.RUN_STOP_REASON: "error"}) == 1


@pytest.mark.parametrize(
    ("finish", "stop"),
    [("stop", "end_turn"), ("length", "max_tokens"), ("content_filter", "refusal"), ("eos", "eos")],
)
def test_finish_reasons_become_the_normalised_stop_reasons(
    peer: Peer, finish: str, stop: str
) -> None:
    peer.run((finish, TEXT_TURN))
    assert peer.total(semconv.STOP_REASONS, **{semconv.RUN_STOP_REASON: stop}) == 1


def test_a_lone_model_call_is_no_agent_run(peer: Peer) -> None:
    peer.chat("tool_calls", TOOL_TURN)
    assert peer.total(semconv.AGENT_RUNS) == 0
    assert peer.processor.open_traces == 0


def test_a_root_with_a_remote_parent_is_this_process_root(peer: Peer) -> None:
    remote = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    context = trace.set_span_in_context(NonRecordingSpan(remote))
    with peer.agent(context=context):
        peer.chat("tool_calls")
    assert bails(peer) == 1


def test_our_own_handlers_runs_are_not_counted_twice(telemetry: InMemoryTelemetry) -> None:
    peer = Peer(telemetry)
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="q", run_id="r1"))
    handler.agent_end(AgentEndEvent(run_id="r1", final_response="", duration_ms=1.0, node_count=1))
    assert peer.total(semconv.AGENT_RUNS) == 1  # the handler's count alone
    assert peer.processor.open_traces == 0


# --- bounded state -------------------------------------------------------------------------


def test_open_traces_at_the_cap_and_one_past_it(telemetry: InMemoryTelemetry) -> None:
    """Roots still open: the agent spans ended, so each trace holds a run. At ``max_traces``
    nothing is judged; one more evicts (and judges) the oldest; its root ending later opens no
    second run."""
    peer = Peer(telemetry, max_traces=3)
    roots = []
    for i in range(4):
        root = peer.tracer.start_span(f"request {i}")
        with trace.use_span(root, end_on_exit=False), peer.agent():
            peer.chat("tool_calls")
        roots.append(root)
        if i == 2:
            assert peer.processor.open_traces == 3
            assert peer.total(semconv.AGENT_RUNS) == 0
    assert peer.processor.open_traces == 3
    assert bails(peer) == 1  # the oldest, evicted and judged on what it saw
    for root in roots:
        root.end()
    assert bails(peer) == 4
    assert peer.total(semconv.AGENT_RUNS) == 4
    assert peer.processor.open_traces == 0


def test_a_trace_past_its_ttl_is_judged_at_the_next_collection(
    telemetry: InMemoryTelemetry,
) -> None:
    peer = Peer(telemetry, trace_ttl_s=0.05)
    root = peer.tracer.start_span("request")
    with trace.use_span(root, end_on_exit=False), peer.agent():
        peer.chat("tool_calls")
    assert peer.processor.open_traces == 1
    time.sleep(0.1)
    assert bails(peer) == 1  # the collection expired it, with no new span
    assert peer.processor.open_traces == 0
    root.end()
    assert bails(peer) == 1


def test_a_span_ending_after_its_root_opens_no_second_run(peer: Peer) -> None:
    with peer.agent() as agent:
        late = peer.tracer.start_span(
            "chat late", attributes={semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT}
        )
        peer.chat("stop", TEXT_TURN)
        context = trace.set_span_in_context(agent)
    late.set_attribute(semconv.GEN_AI_RESPONSE_FINISH_REASONS, ("tool_calls",))
    late.end()
    inner = peer.tracer.start_span(
        "invoke_agent late",
        context=context,
        attributes={semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT},
    )
    inner.end()
    assert peer.total(semconv.AGENT_RUNS) == 1
    assert bails(peer) == 0
    assert peer.processor.open_traces == 0
    assert peer.total(semconv.DROPPED_EVENTS) == 0


def test_a_span_ending_after_the_plain_span_around_it_holds_nothing(peer: Peer) -> None:
    """A handler span (no run, no call) around a model call ends; an agent span started under
    it ends after it: like any span ending after its parent, it is no run, and nothing of it
    is held, lost or counted later."""
    with peer.tracer.start_as_current_span("request"):
        with peer.tracer.start_as_current_span("handler"):
            peer.chat("stop")
            late = peer.tracer.start_span(
                "invoke_agent late",
                attributes={semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT},
            )
        late.end()
    assert peer.processor.open_traces == 0
    peer.processor.shutdown()
    assert peer.total(semconv.AGENT_RUNS) == 0
    assert peer.total(semconv.DROPPED_EVENTS) == 0


# --- malformed input, failures -------------------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        "not json",
        json.dumps({"role": "assistant"}),
        json.dumps([1, None, {"parts": "x"}, {"parts": [3, {"type": 5}]}]),
        json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": 7}]}]),
        "[" * (MAX_JSON_CHARS + 1),
    ],
)
def test_malformed_output_messages_read_as_unknown(peer: Peer, output: str) -> None:
    peer.run(("stop", output))
    assert peer.total(semconv.AGENT_RUNS, **{semconv.RUN_OUTCOME: "completed"}) == 1
    assert bails(peer) == 0
    assert peer.total(semconv.DROPPED_EVENTS) == 0


def test_odd_attribute_types_never_fail(peer: Peer) -> None:
    with peer.agent({semconv.ERROR_TYPE: 3, semconv.TENANT_ID: 12}):
        peer.chat(
            None,
            None,
            **{
                semconv.GEN_AI_RESPONSE_FINISH_REASONS: (1, 2),
                semconv.OPENINFERENCE_FINISH_REASON: True,
                f"{semconv.OPENINFERENCE_OUTPUT_MESSAGES}0.message.content": 5,
            },
        )
    assert peer.total(semconv.AGENT_RUNS, **{semconv.TENANT_ID: "12"}) == 1
    assert peer.total(semconv.DROPPED_EVENTS) == 0


@pytest.mark.usefixtures("failing_on_end")
def test_a_failure_inside_the_processor_never_reaches_the_sdk(peer: Peer) -> None:
    peer.run(("tool_calls", None))  # would raise out of span.end() if the guard let it
    drops = {semconv.TELEMETRY_DROP_REASON: "internal_error"}
    assert peer.total(semconv.DROPPED_EVENTS, **drops) == 2  # the chat span and the agent span


# --- tenants -------------------------------------------------------------------------------


def test_the_first_configured_attribute_found_wins_on_any_span(
    telemetry: InMemoryTelemetry,
) -> None:
    peer = Peer(telemetry, tenant_attributes=("tenant.id", "user.id"))
    with peer.agent({"user.id": "someone"}):
        peer.chat("tool_calls", None, **{"tenant.id": "globex"})
    with peer.agent({"user.id": "initech"}):
        peer.chat("tool_calls")
    assert bails(peer) == 2
    assert peer.total(semconv.SILENT_BAILS, **{semconv.TENANT_ID: "globex"}) == 1
    assert peer.total(semconv.SILENT_BAILS, **{semconv.TENANT_ID: "initech"}) == 1


def test_tenant_scope_ranks_first_then_the_attribute_then_the_default(
    telemetry: InMemoryTelemetry,
) -> None:
    peer = Peer(telemetry, tenant_id="fallback")
    with tenant_scope("scoped"):
        peer.run(("stop", TEXT_TURN), tenant="attribute")
    peer.run(("stop", TEXT_TURN), tenant="attribute")
    peer.run(("stop", TEXT_TURN))
    for tenant in ("scoped", "attribute", "fallback"):
        assert peer.total(semconv.AGENT_RUNS, **{semconv.TENANT_ID: tenant}) == 1
    unconfigured = Peer(InMemoryTelemetry())
    unconfigured.run(("stop", TEXT_TURN))
    assert unconfigured.total(semconv.AGENT_RUNS, **{semconv.TENANT_ID: "unknown"}) == 1
    unconfigured.memory.shutdown()


def test_tenants_are_sanitised_and_capped(telemetry: InMemoryTelemetry) -> None:
    peer = Peer(telemetry, max_tenants=2)
    for tenant in ("a" * 200, "__overflow__", "beta", "gamma"):
        peer.run(("tool_calls", None), tenant=tenant)
    by_tenant = {
        attrs[semconv.TENANT_ID]: value
        for attrs, value in telemetry.points(semconv.SILENT_BAILS.name)
    }
    # Two tenants below the cap (exactly at it), the third and fourth past it.
    assert by_tenant == {"a" * 64: 1, "tenant:__overflow__": 1, "__overflow__": 2}


# --- privacy and options -------------------------------------------------------------------


def test_no_content_reaches_a_metric(peer: Peer) -> None:
    peer.run(("tool_calls", TOOL_TURN), ("stop", TEXT_TURN), tenant="globex")
    for name in (semconv.AGENT_RUNS.name, semconv.SILENT_BAILS.name, semconv.STOP_REASONS.name):
        for attrs, _ in peer.memory.points(name, include_zeros=True):
            assert not any("secret" in str(value) for value in attrs.values())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"tenant_attributes": "tenant.id"}, "tenant_attributes"),
        ({"tenant_attributes": ("",)}, "tenant_attributes"),
        ({"tenant_id": 5}, "tenant_id"),
        ({"agent_name": ""}, "agent_name"),
        ({"max_tenants": 0}, "max_tenants"),
        ({"max_traces": True}, "max_traces"),
        ({"trace_ttl_s": float("inf")}, "trace_ttl_s"),
    ],
)
def test_bad_options_name_the_class_and_the_option(options: dict[str, Any], message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=rf"SilentBailSpanProcessor\({message}="):
        SilentBailSpanProcessor(**options)


def test_the_processor_is_exported_lazily() -> None:
    code = (
        "import sys, symfonic_otel\n"
        "assert 'symfonic_otel.spans' not in sys.modules\n"
        "from symfonic_otel.spans import SilentBailSpanProcessor\n"
        "assert symfonic_otel.SilentBailSpanProcessor is SilentBailSpanProcessor\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_spans_of_one_trace_ending_in_many_threads_are_all_counted(peer: Peer) -> None:
    """Parallel model calls of one run end in several threads at once: every call is folded
    into the run (its iteration count), and the run is judged once."""
    threads, calls = 8, 50
    with peer.agent() as agent:
        context = trace.set_span_in_context(agent)
        barrier = threading.Barrier(threads)

        def work() -> None:
            barrier.wait()
            for _ in range(calls):
                span = peer.tracer.start_span(
                    "chat peer-model",
                    context=context,
                    attributes={
                        semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
                        semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",),
                        semconv.GEN_AI_OUTPUT_MESSAGES: TEXT_TURN,
                    },
                )
                span.end()

        workers = [threading.Thread(target=work) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert peer.total(semconv.AGENT_RUNS) == 1
    (iterations,) = [value for _, value in peer.memory.points(semconv.REACT_ITERATIONS.name)]
    assert isinstance(iterations, HistogramDataPoint)
    assert iterations.sum == threads * calls
    assert bails(peer) == 0


def test_spans_delivered_again_open_no_second_run(peer: Peer) -> None:
    peer.run(("tool_calls", TOOL_TURN), tenant="globex")
    for span in peer.memory.spans():  # the same ended spans, handed over once more
        peer.processor.on_end(span)
    assert peer.total(semconv.AGENT_RUNS) == 1
    assert bails(peer) == 1
    assert peer.processor.open_traces == 0


def test_a_metadata_tenant_ranks_after_the_tenant_attributes(
    telemetry: InMemoryTelemetry,
) -> None:
    peer = Peer(telemetry, tenant_metadata_key="tenant_id")
    metadata = semconv.OPENINFERENCE_METADATA
    with peer.agent({metadata: json.dumps({"tenant_id": "from-metadata"})}):
        peer.chat("stop", TEXT_TURN)
    with peer.agent({metadata: json.dumps({"tenant_id": "from-metadata"})}):
        peer.chat("stop", TEXT_TURN, **{semconv.TENANT_ID: "from-attribute"})
    for broken in ("{", json.dumps(["tenant_id"]), json.dumps({"tenant_id": ["x"]})):
        with peer.agent({metadata: broken}):
            peer.chat("stop", TEXT_TURN)
    runs = {
        attrs[semconv.TENANT_ID]: value
        for attrs, value in telemetry.points(semconv.AGENT_RUNS.name)
    }
    assert runs == {"from-metadata": 1, "from-attribute": 1, "unknown": 3}
