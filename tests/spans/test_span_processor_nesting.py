"""How the span processor places what it reads: sub-agents, wrappers, node spans, caps on
their way up, tool calls, and what it reports beyond the verdict (exemplars, losses, the word
outcome retention keeps a trace on).

Spans written by hand the way the instrumentations shape theirs (``test_span_processor_peers``
checks the shapes against the real ones), on a real SDK provider.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode
from structlog.testing import capture_logs

from symfonic_otel import OutcomeRetentionSpanProcessor, semconv
from symfonic_otel.core.loops import MAX_SIGNATURES
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.loop_support import looping, repeated
from tests.support.span_peer import AGENT, CAP, WORKFLOW, Peer, chat, parts, tool


@pytest.fixture
def peer(telemetry: InMemoryTelemetry) -> Peer:
    return Peer(telemetry)


# --- a sub-agent's ending, relayed to the run around it ------------------------------------


def _runs_by_agent(peer: Peer) -> dict[str, tuple[str | None, object]]:
    """Per agent name: (bail reason, response.empty) of its one run."""
    bails = {
        attrs[semconv.GEN_AI_AGENT_NAME]: attrs[semconv.REACT_TERMINATION_REASON]
        for attrs, value in peer.memory.points(semconv.SILENT_BAILS.name)
        if value
    }
    return {
        attrs[semconv.GEN_AI_AGENT_NAME]: (
            bails.get(attrs[semconv.GEN_AI_AGENT_NAME]),
            attrs.get(semconv.RESPONSE_EMPTY),
        )
        for attrs, value in peer.memory.points(semconv.AGENT_RUNS.name)
        if value
    }


@pytest.mark.parametrize(
    ("inner_call", "inner_failed", "inner", "outer"),
    [
        (("stop", "hi"), False, (None, False), (None, False)),
        (
            ("stop", " "),
            False,
            ("no_content_no_tool_calls", True),
            ("no_content_no_tool_calls", True),
        ),
        (("stop", None), False, (None, None), (None, None)),
        (
            ("tool_calls", None),
            False,
            ("tool_calls_with_no_text", True),
            ("tool_calls_with_no_text", True),
        ),
        (("stop", "hi"), True, (None, None), (None, None)),
    ],
)
def test_a_parent_that_ends_on_its_sub_agent_is_judged_on_what_the_sub_agent_gave(
    peer: Peer,
    inner_call: tuple[str, str | None],
    inner_failed: bool,
    inner: tuple[str | None, object],
    outer: tuple[str | None, object],
) -> None:
    """The parent calls the model once (tools), hands over to a sub-agent and ends: the
    sub-agent's answer is the parent's last word; a failed sub-agent's is not known."""
    finish, text = inner_call
    inner_chat = chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: (finish,)})
    if text is not None:
        inner_chat[semconv.GEN_AI_OUTPUT_MESSAGES] = parts({"type": "text", "content": text})
    agent = AGENT
    with peer.span("outer", {**agent, semconv.GEN_AI_AGENT_NAME: "outer"}):
        peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)}))
        with peer.span("inner", {**agent, semconv.GEN_AI_AGENT_NAME: "inner"}) as span:
            peer.span_once("chat", inner_chat)
            if inner_failed:
                span.set_status(Status(StatusCode.ERROR))
    runs = _runs_by_agent(peer)
    assert runs["inner"] == inner
    assert runs["outer"] == outer


# --- losses --------------------------------------------------------------------------------


@pytest.mark.usefixtures("failing_on_end")
def test_a_failure_inside_the_processor_is_a_span_end_loss(peer: Peer) -> None:
    peer.agent_run(chat())
    [(attrs, value)] = peer.memory.points(semconv.DROPPED_EVENTS.name)
    assert attrs == {
        semconv.TELEMETRY_EVENT: "span_end",
        semconv.TELEMETRY_DROP_REASON: "internal_error",
    }
    assert value == 2


def test_a_loss_that_cannot_be_counted_is_logged_once_as_such(
    peer: Peer, monkeypatch: pytest.MonkeyPatch, failing_on_end: Callable[..., None]
) -> None:
    monkeypatch.setattr(peer.processor._metrics, "dropped", failing_on_end)
    with capture_logs() as logs:
        peer.agent_run(chat())  # two spans: each failure logged once per kind
    failures = [entry for entry in logs if entry["event"] == "symfonic_otel.internal_failure"]
    assert [entry["kind"] for entry in failures] == ["span_processor", "drop_count"]
    assert [entry["error_type"] for entry in failures] == ["RuntimeError", "RuntimeError"]


# --- tool calls, through the spans between them and their run ------------------------------


def test_identical_tool_calls_under_a_node_span_count_as_repeats(peer: Peer) -> None:
    """A graph's tools node between the run and its tool spans (LangGraph's shape): the calls
    are summed on the way up, once."""
    agent = AGENT
    with peer.span("invoke_agent", agent):
        for _ in range(2):
            with peer.span("tools", {}):
                tool(peer, '{"a": 1}')
                tool(peer, '{"a": 1}')
        peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
    assert repeated(peer.memory) == 3
    assert looping(peer.memory, semconv.LOOP_REPEATED_TOOL_CALL) == 1


def test_distinct_tool_calls_are_tracked_up_to_the_signature_bound(peer: Peer) -> None:
    """Past ``MAX_SIGNATURES`` distinct calls a new one is not tracked; one already tracked
    still counts its repeats."""
    agent = AGENT
    with peer.span("invoke_agent", agent):
        for index in range(MAX_SIGNATURES):
            tool(peer, json.dumps({"a": index}))
        tool(peer, json.dumps({"a": 0}))  # tracked: a repeat
        for _ in range(3):
            tool(peer, json.dumps({"a": "new"}))  # one past the bound: not tracked
    assert repeated(peer.memory) == 1
    assert looping(peer.memory) == 0


def test_a_span_wrapping_one_invocation_keeps_the_invocations_recorded_answer(
    peer: Peer,
) -> None:
    """OpenLLMetry's workflow span around an ``invoke_agent`` that recorded a blank final
    result: the wrapper records no output of its own, and the blank answer stands."""
    agent = AGENT
    workflow = {semconv.TRACELOOP_SPAN_KIND: semconv.TRACELOOP_KIND_WORKFLOW}
    blank_result = {**agent, semconv.PYDANTIC_AI_FINAL_RESULT: " "}
    with peer.span("workflow", workflow), peer.span("invoke_agent", blank_result):
        peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
    assert peer.verdict() == ("no_content_no_tool_calls", "end_turn", True)


def test_an_invocation_counted_at_its_wrappers_eviction_is_not_counted_again(
    telemetry: InMemoryTelemetry,
) -> None:
    """``max_traces=1``: the wrapper of an ended invocation is evicted (and its run counted)
    by another trace; the wrapper ending later opens no second run."""
    peer = Peer(telemetry, max_traces=1)
    agent = AGENT
    workflow = peer.tracer.start_span(
        "workflow", attributes={semconv.TRACELOOP_SPAN_KIND: semconv.TRACELOOP_KIND_WORKFLOW}
    )
    with trace.use_span(workflow, end_on_exit=False), peer.span("invoke_agent", agent):
        peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
    with peer.span("another request", {}):
        peer.span_once("chat", chat())  # takes the one open slot: the wrapper is evicted
    assert peer.value(semconv.AGENT_RUNS) == 1
    workflow.end()
    assert peer.value(semconv.AGENT_RUNS) == 1
    assert peer.processor.open_traces == 0


# --- exemplars -----------------------------------------------------------------------------


def _exemplars(metrics: dict[str, Any], name: str) -> list[tuple[int, int]]:
    return [
        (exemplar.trace_id, exemplar.span_id)
        for point in metrics[name].data.data_points
        for exemplar in point.exemplars
    ]


def test_a_bailing_runs_span_is_the_exemplar_of_its_duration_and_its_bail(peer: Peer) -> None:
    agent = AGENT
    with peer.span("invoke_agent", agent) as span:
        peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)}))
    run = (span.get_span_context().trace_id, span.get_span_context().span_id)
    metrics = peer.memory.metrics()
    assert _exemplars(metrics, semconv.AGENT_DURATION.name) == [run]
    assert _exemplars(metrics, semconv.SILENT_BAILS.name) == [run]


def test_of_two_recorded_answers_ending_on_one_tick_the_wrappers_is_the_last(
    peer: Peer,
) -> None:
    """The invocation recorded an answer, its wrapper a blank one, both ending on one clock
    tick: the later reported (the wrapper's) is the run's final output."""
    tick = 1_000_000_000
    agent = AGENT
    workflow = peer.tracer.start_span(
        "workflow",
        attributes={
            semconv.TRACELOOP_SPAN_KIND: semconv.TRACELOOP_KIND_WORKFLOW,
            semconv.PYDANTIC_AI_FINAL_RESULT: " ",
        },
        start_time=tick,
    )
    context = trace.set_span_in_context(workflow)
    inner = peer.tracer.start_span(
        "invoke_agent",
        context=context,
        attributes={**agent, semconv.PYDANTIC_AI_FINAL_RESULT: "hi"},
        start_time=tick,
    )
    inner.end(end_time=tick + 10)
    workflow.end(end_time=tick + 10)
    assert peer.verdict() == ("no_content_no_tool_calls", None, True)


def test_the_calls_per_run_carry_the_runs_outcome(peer: Peer) -> None:
    agent = AGENT
    peer.agent_run(chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
    with peer.span("invoke_agent", agent) as span:
        peer.span_once("chat", chat())
        span.set_status(Status(StatusCode.ERROR))
    points = peer.memory.points(semconv.INVOKE_AGENT_INFERENCE_CALLS.name)
    assert sorted(attrs[semconv.RUN_OUTCOME] for attrs, _ in points) == ["completed", "error"]


def test_a_looping_runs_span_is_the_exemplar_of_its_loop(peer: Peer) -> None:
    agent = AGENT
    with peer.span("invoke_agent", agent) as span:
        for _ in range(3):
            tool(peer, '{"a": 1}')
    run = (span.get_span_context().trace_id, span.get_span_context().span_id)
    metrics = peer.memory.metrics()
    assert _exemplars(metrics, semconv.LOOPING_RUNS.name) == [run]


# --- which traces outcome retention keeps on the processor's word --------------------------


@pytest.mark.parametrize(
    ("text", "failed", "kept"),
    [("hi", False, False), (" ", False, True), ("hi", True, True), (None, False, False)],
    ids=["answer", "blank-bail", "error", "unknown"],
)
def test_retention_keeps_the_traces_of_bails_and_errors_only(
    telemetry: InMemoryTelemetry, text: str | None, failed: bool, kept: bool
) -> None:
    """An OpenLLMetry workflow below the request's span: its ERROR status alone is no reason
    retention reads, the processor's verdict (outcome ``error``) is."""
    exported = InMemorySpanExporter()
    retention = OutcomeRetentionSpanProcessor(
        SimpleSpanProcessor(exported), healthy_trace_ratio=0.0
    )
    telemetry.tracer_provider.add_span_processor(retention)
    peer = Peer(telemetry)
    call = chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)})
    if text is not None:
        call[semconv.GEN_AI_OUTPUT_MESSAGES] = parts({"type": "text", "content": text})
    with peer.span("request", {}), peer.span("workflow", WORKFLOW) as span:
        peer.span_once("chat", call)
        if failed:
            span.set_status(Status(StatusCode.ERROR))
    assert len(exported.get_finished_spans()) == (3 if kept else 0)


def test_a_step_cap_on_a_node_span_inside_the_run_caps_the_run(peer: Peer) -> None:
    """LangGraph's recursion error recorded on a node span (no run) inside the agent run."""
    agent = AGENT
    cap = {semconv.ERROR_TYPE: "langgraph.errors.GraphRecursionError"}
    with peer.span("invoke_agent", agent), peer.span("node", cap):
        peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
    assert peer.verdict() == ("tool_calls_with_no_text", "recursion_limit", None)
    assert peer.value(semconv.AGENT_RUNS, **{semconv.RUN_OUTCOME: "error"}) == 1


def test_a_step_cap_in_an_agent_node_caps_the_graph_run_it_is_part_of(peer: Peer) -> None:
    """OpenInference: the root chain is the run; an ``AGENT`` node below it is part of that
    run, and the recursion error recorded on the node caps the run."""
    chain = {semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_KIND_CHAIN}
    node = {
        semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_KIND_AGENT,
        semconv.ERROR_TYPE: "langgraph.errors.GraphRecursionError",
    }
    with peer.span("LangGraph", chain), peer.span("agent", node):
        peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
    assert peer.verdict() == ("tool_calls_with_no_text", "recursion_limit", None)
    assert peer.value(semconv.AGENT_RUNS, **{semconv.RUN_OUTCOME: "error"}) == 1


def test_a_sub_agents_cap_raised_through_an_agent_node_and_the_graph_counts_once(
    peer: Peer,
) -> None:
    """A capped sub-agent called from an OpenInference agent node: its recursion error is
    recorded again on the node and on the root chain on its way up; one bail, the sub-agent's."""
    cap = {semconv.ERROR_TYPE: "langgraph.errors.GraphRecursionError"}
    chain = {semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_KIND_CHAIN, **cap}
    node = {semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_KIND_AGENT, **cap}
    sub = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT, **cap}
    tool_turn = chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)})
    with peer.span("LangGraph", chain), peer.span("agent", node):
        peer.span_once("chat", tool_turn)
        with peer.span("invoke_agent", sub):
            peer.span_once("chat", tool_turn)
    assert peer.value(semconv.SILENT_BAILS) == 1
    assert peer.value(semconv.AGENT_RUNS, **{semconv.RUN_OUTCOME: "error"}) == 2


def test_a_wrapped_invocation_below_another_run_is_a_sub_run_of_its_own(peer: Peer) -> None:
    """A supervisor calls a sub-agent whose ``invoke_agent`` span OpenLLMetry wraps in a
    workflow span: two runs, the wrapped one not folded into the supervisor's."""
    agent = AGENT
    answer = chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)})
    with peer.span("invoke_agent", {**agent, semconv.GEN_AI_AGENT_NAME: "outer"}):
        peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)}))
        with peer.span("workflow", WORKFLOW), peer.span("invoke_agent", agent):
            peer.span_once("chat", answer)
        peer.span_once("chat", answer)
    assert peer.value(semconv.AGENT_RUNS) == 2


def test_a_failed_wrapper_fails_the_invocation_it_wraps(peer: Peer) -> None:
    agent = AGENT
    with peer.span("workflow", WORKFLOW) as wrapper, peer.span("invoke_agent", agent):
        peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
        wrapper.set_status(Status(StatusCode.ERROR))
    assert peer.value(semconv.AGENT_RUNS, **{semconv.RUN_OUTCOME: "error"}) == 1


@pytest.mark.parametrize("where", ["wrapper", "node-between"])
def test_a_cap_recorded_around_a_wrapped_invocation_caps_it(peer: Peer, where: str) -> None:
    """The recursion error on the wrapper itself, or on a span that is no run between the
    wrapper and the invocation: the invocation is capped, once."""
    wrapper = {**WORKFLOW, **CAP} if where == "wrapper" else WORKFLOW
    node = CAP if where == "node-between" else {}
    with peer.span("workflow", wrapper), peer.span("node", node), peer.span("agent", AGENT):
        peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
    assert peer.verdict() == ("tool_calls_with_no_text", "recursion_limit", None)


def test_a_cap_below_a_wrapped_invocation_is_not_counted_again_above_it(peer: Peer) -> None:
    """A sub-agent capped inside an invocation that a workflow wraps, inside a supervisor:
    the error recorded on every span on its way up is the sub-agent's one bail."""
    tool_turn = chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)})
    with peer.span("supervisor", {**AGENT, **CAP}):
        peer.span_once("chat", tool_turn)
        with peer.span("workflow", {**WORKFLOW, **CAP}), peer.span("agent", {**AGENT, **CAP}):
            peer.span_once("chat", tool_turn)
            with peer.span("sub-agent", {**AGENT, **CAP}):
                peer.span_once("chat", tool_turn)
    assert peer.value(semconv.SILENT_BAILS) == 1
    assert peer.value(semconv.AGENT_RUNS) == 3


@pytest.mark.parametrize(("same", "repeats"), [(False, 0), (True, 2)])
def test_tool_calls_beside_a_wrapped_invocation_count_for_it(
    peer: Peer, same: bool, repeats: int
) -> None:
    """Tool spans under the wrapper but outside the invocation count for the invocation, each
    with its own arguments and each as often as it was made."""
    with peer.span("workflow", WORKFLOW):
        with peer.span("agent", AGENT):
            peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
        for index in range(3):
            tool(peer, json.dumps({"a": 0 if same else index}))
    assert peer.value(semconv.AGENT_RUNS) == 1
    assert repeated(peer.memory) == repeats
    assert looping(peer.memory) == (1 if same else 0)


def test_a_parent_that_ends_on_its_sub_agent_takes_the_sub_agents_stop_reason(
    peer: Peer,
) -> None:
    with peer.span("outer", {**AGENT, semconv.GEN_AI_AGENT_NAME: "outer"}):
        peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)}))
        with peer.span("inner", {**AGENT, semconv.GEN_AI_AGENT_NAME: "inner"}):
            peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("length",)}))
    stops = {
        attrs[semconv.GEN_AI_AGENT_NAME]: attrs[semconv.RUN_STOP_REASON]
        for attrs, value in peer.memory.points(semconv.STOP_REASONS.name)
        if value
    }
    assert stops == {"outer": "max_tokens", "inner": "max_tokens"}


def test_a_sub_agents_ending_is_no_model_call_of_the_parent(peer: Peer) -> None:
    with peer.span("outer", {**AGENT, semconv.GEN_AI_AGENT_NAME: "outer"}):
        peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)}))
        with peer.span("inner", {**AGENT, semconv.GEN_AI_AGENT_NAME: "inner"}):
            peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
    calls = {
        attrs[semconv.GEN_AI_AGENT_NAME]: point.sum
        for attrs, point in peer.memory.points(semconv.INVOKE_AGENT_INFERENCE_CALLS.name)
    }
    assert calls == {"outer": 1, "inner": 1}


def test_a_tenant_found_inside_the_run_outranks_a_lesser_one_above_it(peer: Peer) -> None:
    """``tenant_id`` (the first attribute) on the model call, OpenLLMetry's association
    property (the second) on the request span above the run: the first wins."""
    association = semconv.SPAN_TENANT_ATTRIBUTES[1]
    with peer.span("request", {association: "globex"}), peer.span("agent", AGENT):
        peer.span_once("chat", chat(**{semconv.TENANT_ID: "acme"}))
    assert peer.value(semconv.AGENT_RUNS, **{semconv.TENANT_ID: "acme"}) == 1


ENDINGS = {
    "step-cap": ("tool_calls", None),
    "failure": ("tool_calls", None),
    "tool-calls": ("tool_calls", None),
    "blank": ("stop", " "),
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_every_ending_records_the_runs_duration_and_iterations(peer: Peer, ending: str) -> None:
    """Ten seconds, two model calls, whether the run was capped, failed, or bailed."""
    finish, text = ENDINGS[ending]
    last = chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: (finish,)})
    if text is not None:
        last[semconv.GEN_AI_OUTPUT_MESSAGES] = parts({"type": "text", "content": text})
    attributes = {**AGENT, **(CAP if ending == "step-cap" else {})}
    span = peer.tracer.start_span("invoke_agent", attributes=attributes, start_time=10**9)
    with trace.use_span(span, end_on_exit=False):
        peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)}))
        peer.span_once("chat", last)
    if ending in ("step-cap", "failure"):
        span.set_status(Status(StatusCode.ERROR))
    span.end(end_time=11 * 10**9)
    [(_, duration)] = peer.memory.points(semconv.AGENT_DURATION.name)
    assert (duration.count, duration.sum) == (1, 10.0)
    [(_, iterations)] = peer.memory.points(semconv.REACT_ITERATIONS.name)
    assert iterations.sum == 2
