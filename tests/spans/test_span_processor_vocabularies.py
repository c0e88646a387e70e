"""Each vocabulary the span processor reads, one witness at a time: the verdict it gives.

Spans written the way GenAI semantic conventions, OpenInference and OpenLLMetry name things
(the shapes ``test_span_processor_peers`` checks against the real instrumentations), each
carrying a single piece of evidence, so that every name and every rule is seen to decide the
run's bail, stop reason, blank flag or label on its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode
from opentelemetry.util.types import AttributeValue
from structlog.testing import capture_logs

from symfonic_otel import OutcomeRetentionSpanProcessor, semconv
from symfonic_otel.core.loops import MAX_SIGNATURES
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.spans.reading import MAX_JSON_CHARS
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.loop_support import looping, repeated

OI_MESSAGES = semconv.OPENINFERENCE_OUTPUT_MESSAGES
COMPLETIONS = semconv.TRACELOOP_COMPLETIONS


def _parts(*parts: dict[str, Any]) -> str:
    return json.dumps([{"role": "assistant", "parts": list(parts)}])


class Peer:
    """Another instrumentation's tracer on the provider the processor is installed on."""

    def __init__(self, memory: InMemoryTelemetry, **options: Any) -> None:
        self.memory = memory
        self.processor = SilentBailSpanProcessor(meter_provider=memory.meter_provider, **options)
        memory.tracer_provider.add_span_processor(self.processor)
        self.tracer = memory.tracer_provider.get_tracer("peer-instrumentation")

    @contextmanager
    def span(self, name: str, attributes: Mapping[str, AttributeValue]) -> Iterator[trace.Span]:
        with self.tracer.start_as_current_span(name, attributes=attributes) as s:
            yield s

    def agent_run(
        self,
        chat: Mapping[str, AttributeValue],
        agent: Mapping[str, AttributeValue] | None = None,
    ) -> None:
        """A GenAI ``invoke_agent`` span around one model call with these attributes."""
        agent_attributes = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
        with self.span("invoke_agent", {**agent_attributes, **(agent or {})}):
            self.span_once("chat", chat)

    def span_once(self, name: str, attributes: Mapping[str, AttributeValue]) -> None:
        with self.span(name, attributes):
            pass

    def value(self, spec: semconv.InstrumentSpec, **where: Any) -> float:
        return self.memory.value(spec.name, where or None)

    def verdict(self) -> tuple[str | None, str | None, object]:
        """(bail reason, stop reason, response.empty) of the one run counted."""
        [(run, _)] = self.memory.points(semconv.AGENT_RUNS.name)
        bails = [
            attrs[semconv.REACT_TERMINATION_REASON]
            for attrs, value in self.memory.points(semconv.SILENT_BAILS.name)
            if value
        ]
        stops = [
            attrs[semconv.RUN_STOP_REASON]
            for attrs, value in self.memory.points(semconv.STOP_REASONS.name)
            if value
        ]
        assert len(bails) <= 1 and len(stops) <= 1
        return (
            bails[0] if bails else None,
            stops[0] if stops else None,
            run.get(semconv.RESPONSE_EMPTY),
        )


@pytest.fixture
def peer(telemetry: InMemoryTelemetry) -> Peer:
    return Peer(telemetry)


def _chat(**attributes: AttributeValue) -> dict[str, AttributeValue]:
    return {semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT, **attributes}


# --- the parts of gen_ai.output.messages -------------------------------------------------------


@pytest.mark.parametrize(
    ("parts", "bail", "empty"),
    [
        ([{"type": "output_text", "content": "hi"}], None, False),
        ([{"type": "text", "content": "hi"}, {"type": "tool_call"}], None, False),
        ([{"type": "function_call"}], "tool_calls_with_no_text", True),
        ([{"type": "tool_use"}], "tool_calls_with_no_text", True),
        ([{"type": "image"}], None, False),
        ([{"type": "blob"}], None, False),
        ([{"type": "uri"}], None, False),
        ([{"type": "file"}], None, False),
        ([{"type": "reasoning", "content": "I think"}], "no_content_no_tool_calls", True),
        (
            [{"type": "thinking"}, {"type": "text", "content": " "}],
            "no_content_no_tool_calls",
            True,
        ),
        ([{"type": "text", "content": "hi"}, {"type": "text", "content": " "}], None, False),
        ([{"type": "text", "content": " "}, {"type": "text", "content": "hi"}], None, False),
        ([{"type": "something_new"}], None, None),
        ([{"type": "text"}, {"type": "text", "content": " "}], None, None),
    ],
)
def test_each_part_type_of_the_output_messages_decides_the_verdict(
    peer: Peer, parts: list[dict[str, Any]], bail: str | None, empty: bool | None
) -> None:
    peer.agent_run(
        _chat(
            **{
                semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("end_turn",),
                semconv.GEN_AI_OUTPUT_MESSAGES: _parts(*parts),
            }
        )
    )
    assert peer.verdict()[0] == bail
    assert peer.verdict()[2] == empty


def test_a_message_without_parts_leaves_the_answer_unknown(peer: Peer) -> None:
    messages = json.dumps([{"role": "assistant"}, {"role": "assistant", "parts": []}])
    peer.agent_run(_chat(**{semconv.GEN_AI_OUTPUT_MESSAGES: messages}))
    assert peer.verdict() == (None, None, None)


# --- finish reasons ------------------------------------------------------------------------


@pytest.mark.parametrize("finish", ["tool_calls", "tool_call", "tool_use", "function_call"])
def test_every_tool_finish_reason_ends_the_run_on_tool_calls(peer: Peer, finish: str) -> None:
    peer.agent_run(_chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: (finish.upper(),)}))
    assert peer.verdict() == ("tool_calls_with_no_text", "recursion_limit", True)


@pytest.mark.parametrize(
    ("attributes", "stop"),
    [
        ({semconv.OPENINFERENCE_FINISH_REASON: "length"}, "max_tokens"),
        ({semconv.TRACELOOP_FINISH_REASON: "content_filter"}, "refusal"),
        ({f"{COMPLETIONS}0.finish_reason": "stop"}, "end_turn"),
        ({semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("length", "stop")}, "max_tokens"),
        (
            {
                semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",),
                semconv.OPENINFERENCE_FINISH_REASON: "length",
            },
            "end_turn",
        ),
        (
            {
                semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("",),
                semconv.OPENINFERENCE_FINISH_REASON: "length",
            },
            "max_tokens",
        ),
        ({semconv.GEN_AI_RESPONSE_FINISH_REASONS: ["", "Length"]}, "max_tokens"),
    ],
)
def test_the_finish_reason_is_read_from_each_vocabulary_in_order(
    peer: Peer, attributes: dict[str, AttributeValue], stop: str
) -> None:
    peer.agent_run(_chat(**attributes))
    assert peer.verdict()[1] == stop


def test_a_call_with_input_but_no_output_recorded_said_nothing(peer: Peer) -> None:
    """util-genai records output messages only when there is output: with the input on the
    span (content capture on), no output is a blank answer; without it, not known."""
    recorded_input = _parts({"type": "text", "content": "question"})
    peer.agent_run(
        _chat(
            **{
                semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",),
                semconv.GEN_AI_INPUT_MESSAGES: recorded_input,
            }
        )
    )
    assert peer.verdict() == ("no_content_no_tool_calls", "end_turn", True)


def test_input_alone_without_a_finish_reason_is_no_blank_answer(peer: Peer) -> None:
    peer.agent_run(_chat(**{semconv.GEN_AI_INPUT_MESSAGES: "[]"}))
    assert peer.verdict() == (None, None, None)


# --- flattened messages --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attributes", "bail", "empty"),
    [
        ({f"{OI_MESSAGES}0.message.role": "assistant"}, "no_content_no_tool_calls", True),
        ({f"{OI_MESSAGES}0.message.content": "hi"}, None, False),
        ({f"{OI_MESSAGES}0.message.content": "  "}, "no_content_no_tool_calls", True),
        ({f"{OI_MESSAGES}0.message.contents.0.message_content.text": "hi"}, None, False),
        (
            {f"{OI_MESSAGES}0.message.tool_calls.0.tool_call.function.name": "add"},
            "tool_calls_with_no_text",
            True,
        ),
        ({f"{COMPLETIONS}0.role": "assistant"}, "no_content_no_tool_calls", True),
        ({f"{COMPLETIONS}0.content": "hi"}, None, False),
        ({f"{COMPLETIONS}0.function_call.name": "add"}, "tool_calls_with_no_text", True),
        ({f"{COMPLETIONS}0.tool_calls.0.name": "add"}, "tool_calls_with_no_text", True),
        (
            {f"{COMPLETIONS}0.content": "hi", f"{COMPLETIONS}1.content": " "},
            None,
            False,
        ),
        ({"llm.other.0.message.role": "assistant"}, None, None),
    ],
)
def test_flattened_messages_of_each_instrumentation_decide_the_verdict(
    peer: Peer, attributes: dict[str, AttributeValue], bail: str | None, empty: bool | None
) -> None:
    peer.agent_run(_chat(**attributes))
    assert peer.verdict()[0] == bail
    assert peer.verdict()[2] == empty


# --- which spans are model calls and runs --------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        {semconv.GEN_AI_OPERATION_NAME: semconv.OP_TEXT_COMPLETION},
        {semconv.GEN_AI_OPERATION_NAME: semconv.OP_GENERATE_CONTENT},
        {semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_KIND_LLM},
        {semconv.TRACELOOP_REQUEST_TYPE: "completion"},
        {semconv.TRACELOOP_REQUEST_TYPE: semconv.OP_CHAT},
    ],
)
def test_each_kind_of_model_call_is_read(peer: Peer, call: dict[str, AttributeValue]) -> None:
    peer.agent_run({**call, semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)})
    assert peer.verdict() == ("tool_calls_with_no_text", "recursion_limit", True)


@pytest.mark.parametrize(
    "run",
    [
        {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_WORKFLOW},
        {semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_KIND_AGENT},
        {semconv.TRACELOOP_SPAN_KIND: semconv.TRACELOOP_KIND_WORKFLOW},
        {semconv.TRACELOOP_SPAN_KIND: semconv.TRACELOOP_KIND_AGENT},
    ],
)
def test_each_kind_of_run_span_is_a_run(peer: Peer, run: dict[str, AttributeValue]) -> None:
    with peer.span("app", {}), peer.span("run", run):
        peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
    assert peer.value(semconv.AGENT_RUNS) == 1


def test_a_chain_is_a_run_only_at_the_root(peer: Peer) -> None:
    chain = {semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_KIND_CHAIN}
    call = _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)})
    with peer.span("app", {}), peer.span("chain", chain):
        peer.span_once("chat", call)
    assert peer.value(semconv.AGENT_RUNS) == 0
    with peer.span("chain", chain):
        peer.span_once("chat", call)
    assert peer.verdict() == ("tool_calls_with_no_text", "recursion_limit", True)


# --- the run span's own answer, its name ---------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "bail", "empty"),
    [
        (
            {
                semconv.OPENINFERENCE_OUTPUT_VALUE: " ",
                semconv.OPENINFERENCE_OUTPUT_MIME_TYPE: "text/plain",
            },
            "no_content_no_tool_calls",
            True,
        ),
        (
            {
                semconv.OPENINFERENCE_OUTPUT_VALUE: "hi",
                semconv.OPENINFERENCE_OUTPUT_MIME_TYPE: "text/plain",
            },
            None,
            False,
        ),
        (
            {
                semconv.OPENINFERENCE_OUTPUT_VALUE: " ",
                semconv.OPENINFERENCE_OUTPUT_MIME_TYPE: "application/json",
            },
            None,
            None,
        ),
        ({semconv.PYDANTIC_AI_FINAL_RESULT: " "}, "no_content_no_tool_calls", True),
        ({semconv.PYDANTIC_AI_FINAL_RESULT: "hi"}, None, False),
        ({semconv.GEN_AI_OUTPUT_MESSAGES: _parts({"type": "text", "content": "hi"})}, None, False),
        (
            {
                semconv.GEN_AI_OUTPUT_MESSAGES: _parts({"type": "tool_call"}),
                semconv.PYDANTIC_AI_FINAL_RESULT: " ",
            },
            "no_content_no_tool_calls",
            True,
        ),
    ],
)
def test_the_run_spans_final_output_decides_over_an_unknown_call(
    peer: Peer, agent: dict[str, AttributeValue], bail: str | None, empty: bool | None
) -> None:
    peer.agent_run(_chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}), agent)
    assert peer.verdict() == (bail, "end_turn", empty)


@pytest.mark.parametrize(("name", "label"), [("planner", "planner"), ("LangGraph", "symfonic")])
def test_the_agent_name_on_the_run_span_labels_the_run(peer: Peer, name: str, label: str) -> None:
    peer.agent_run(_chat(), {semconv.GEN_AI_AGENT_NAME: name})
    [(attrs, _)] = peer.memory.points(semconv.AGENT_RUNS.name)
    assert attrs[semconv.GEN_AI_AGENT_NAME] == label


@pytest.mark.parametrize(("recorded", "tenant"), [(42, "42"), (2.5, "2.5"), ("acme", "acme")])
def test_a_metadata_tenant_of_any_scalar_type_is_read(
    telemetry: InMemoryTelemetry, recorded: object, tenant: str
) -> None:
    peer = Peer(telemetry, tenant_metadata_key="tenant_id")
    peer.agent_run(_chat(), {semconv.OPENINFERENCE_METADATA: json.dumps({"tenant_id": recorded})})
    assert peer.value(semconv.AGENT_RUNS, **{semconv.TENANT_ID: tenant}) == 1


@pytest.mark.parametrize("recorded", ["", True, None, [1], '{"tenant_id": oops'])
def test_a_metadata_tenant_that_is_no_scalar_is_unknown(
    telemetry: InMemoryTelemetry, recorded: object
) -> None:
    peer = Peer(telemetry, tenant_metadata_key="tenant_id")
    metadata = recorded if recorded == '{"tenant_id": oops' else json.dumps({"tenant_id": recorded})
    peer.agent_run(_chat(), {semconv.OPENINFERENCE_METADATA: str(metadata)})
    assert peer.value(semconv.AGENT_RUNS, **{semconv.TENANT_ID: "unknown"}) == 1


def test_a_metadata_attribute_of_no_text_type_reads_as_no_tenant(
    telemetry: InMemoryTelemetry,
) -> None:
    peer = Peer(telemetry, tenant_metadata_key="tenant_id")
    peer.agent_run(_chat(), {semconv.OPENINFERENCE_METADATA: 7})
    assert peer.value(semconv.AGENT_RUNS, **{semconv.TENANT_ID: "unknown"}) == 1
    assert peer.value(semconv.DROPPED_EVENTS) == 0


@pytest.mark.parametrize(("extra", "tenant"), [(0, "acme"), (1, "unknown")])
def test_metadata_is_read_up_to_the_json_bound_and_not_past_it(
    telemetry: InMemoryTelemetry, extra: int, tenant: str
) -> None:
    peer = Peer(telemetry, tenant_metadata_key="tenant_id")
    bare = json.dumps({"tenant_id": "acme", "pad": ""})
    padding = "x" * (MAX_JSON_CHARS - len(bare) + extra)
    metadata = json.dumps({"tenant_id": "acme", "pad": padding})
    assert len(metadata) == MAX_JSON_CHARS + extra
    peer.agent_run(_chat(), {semconv.OPENINFERENCE_METADATA: metadata})
    assert peer.value(semconv.AGENT_RUNS, **{semconv.TENANT_ID: tenant}) == 1


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
    inner_chat = _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: (finish,)})
    if text is not None:
        inner_chat[semconv.GEN_AI_OUTPUT_MESSAGES] = _parts({"type": "text", "content": text})
    agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
    with peer.span("outer", {**agent, semconv.GEN_AI_AGENT_NAME: "outer"}):
        peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)}))
        with peer.span("inner", {**agent, semconv.GEN_AI_AGENT_NAME: "inner"}) as span:
            peer.span_once("chat", inner_chat)
            if inner_failed:
                span.set_status(Status(StatusCode.ERROR))
    runs = _runs_by_agent(peer)
    assert runs["inner"] == inner
    assert runs["outer"] == outer


# --- losses --------------------------------------------------------------------------------


def test_a_failure_inside_the_processor_is_a_span_end_loss(
    peer: Peer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(peer.processor, "_on_end", broken)
    peer.agent_run(_chat())
    [(attrs, value)] = peer.memory.points(semconv.DROPPED_EVENTS.name)
    assert attrs == {
        semconv.TELEMETRY_EVENT: "span_end",
        semconv.TELEMETRY_DROP_REASON: "internal_error",
    }
    assert value == 2


def test_a_loss_that_cannot_be_counted_is_logged_once_as_such(
    peer: Peer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(peer.processor, "_on_end", broken)
    monkeypatch.setattr(peer.processor._metrics, "dropped", broken)
    with capture_logs() as logs:
        peer.agent_run(_chat())  # two spans: each failure logged once per kind
    failures = [entry for entry in logs if entry["event"] == "symfonic_otel.internal_failure"]
    assert [entry["kind"] for entry in failures] == ["span_processor", "drop_count"]
    assert [entry["error_type"] for entry in failures] == ["RuntimeError", "RuntimeError"]


# --- tool calls, through the spans between them and their run ------------------------------


def _tool(peer: Peer, arguments: str) -> None:
    peer.span_once(
        "execute_tool add",
        {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_EXECUTE_TOOL,
            semconv.GEN_AI_TOOL_NAME: "add",
            semconv.GEN_AI_TOOL_CALL_ARGUMENTS: arguments,
        },
    )


def test_identical_tool_calls_under_a_node_span_count_as_repeats(peer: Peer) -> None:
    """A graph's tools node between the run and its tool spans (LangGraph's shape): the calls
    are summed on the way up, once."""
    agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
    with peer.span("invoke_agent", agent):
        for _ in range(2):
            with peer.span("tools", {}):
                _tool(peer, '{"a": 1}')
                _tool(peer, '{"a": 1}')
        peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
    assert repeated(peer.memory) == 3
    assert looping(peer.memory, semconv.LOOP_REPEATED_TOOL_CALL) == 1


def test_distinct_tool_calls_are_tracked_up_to_the_signature_bound(peer: Peer) -> None:
    """Past ``MAX_SIGNATURES`` distinct calls a new one is not tracked; one already tracked
    still counts its repeats."""
    agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
    with peer.span("invoke_agent", agent):
        for index in range(MAX_SIGNATURES):
            _tool(peer, json.dumps({"a": index}))
        _tool(peer, json.dumps({"a": 0}))  # tracked: a repeat
        for _ in range(3):
            _tool(peer, json.dumps({"a": "new"}))  # one past the bound: not tracked
    assert repeated(peer.memory) == 1
    assert looping(peer.memory) == 0


def test_a_span_wrapping_one_invocation_keeps_the_invocations_recorded_answer(
    peer: Peer,
) -> None:
    """OpenLLMetry's workflow span around an ``invoke_agent`` that recorded a blank final
    result: the wrapper records no output of its own, and the blank answer stands."""
    agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
    workflow = {semconv.TRACELOOP_SPAN_KIND: semconv.TRACELOOP_KIND_WORKFLOW}
    blank_result = {**agent, semconv.PYDANTIC_AI_FINAL_RESULT: " "}
    with peer.span("workflow", workflow), peer.span("invoke_agent", blank_result):
        peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
    assert peer.verdict() == ("no_content_no_tool_calls", "end_turn", True)


def test_an_invocation_counted_at_its_wrappers_eviction_is_not_counted_again(
    telemetry: InMemoryTelemetry,
) -> None:
    """``max_traces=1``: the wrapper of an ended invocation is evicted (and its run counted)
    by another trace; the wrapper ending later opens no second run."""
    peer = Peer(telemetry, max_traces=1)
    agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
    workflow = peer.tracer.start_span(
        "workflow", attributes={semconv.TRACELOOP_SPAN_KIND: semconv.TRACELOOP_KIND_WORKFLOW}
    )
    with trace.use_span(workflow, end_on_exit=False), peer.span("invoke_agent", agent):
        peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
    with peer.span("another request", {}):
        peer.span_once("chat", _chat())  # takes the one open slot: the wrapper is evicted
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
    agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
    with peer.span("invoke_agent", agent) as span:
        peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)}))
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
    agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
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
    agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
    peer.agent_run(_chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
    with peer.span("invoke_agent", agent) as span:
        peer.span_once("chat", _chat())
        span.set_status(Status(StatusCode.ERROR))
    points = peer.memory.points(semconv.INVOKE_AGENT_INFERENCE_CALLS.name)
    assert sorted(attrs[semconv.RUN_OUTCOME] for attrs, _ in points) == ["completed", "error"]


def test_a_looping_runs_span_is_the_exemplar_of_its_loop(peer: Peer) -> None:
    agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
    with peer.span("invoke_agent", agent) as span:
        for _ in range(3):
            _tool(peer, '{"a": 1}')
    run = (span.get_span_context().trace_id, span.get_span_context().span_id)
    metrics = peer.memory.metrics()
    assert _exemplars(metrics, semconv.LOOPING_RUNS.name) == [run]


# --- which traces outcome retention keeps on the processor's word --------------------------


WORKFLOW = {semconv.TRACELOOP_SPAN_KIND: semconv.TRACELOOP_KIND_WORKFLOW}


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
    call = _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)})
    if text is not None:
        call[semconv.GEN_AI_OUTPUT_MESSAGES] = _parts({"type": "text", "content": text})
    with peer.span("request", {}), peer.span("workflow", WORKFLOW) as span:
        peer.span_once("chat", call)
        if failed:
            span.set_status(Status(StatusCode.ERROR))
    assert len(exported.get_finished_spans()) == (3 if kept else 0)


def test_a_step_cap_on_a_node_span_inside_the_run_caps_the_run(peer: Peer) -> None:
    """LangGraph's recursion error recorded on a node span (no run) inside the agent run."""
    agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
    cap = {semconv.ERROR_TYPE: "langgraph.errors.GraphRecursionError"}
    with peer.span("invoke_agent", agent), peer.span("node", cap):
        peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
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
        peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
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
    tool_turn = _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)})
    with peer.span("LangGraph", chain), peer.span("agent", node):
        peer.span_once("chat", tool_turn)
        with peer.span("invoke_agent", sub):
            peer.span_once("chat", tool_turn)
    assert peer.value(semconv.SILENT_BAILS) == 1
    assert peer.value(semconv.AGENT_RUNS, **{semconv.RUN_OUTCOME: "error"}) == 2


def test_a_wrapped_invocation_below_another_run_is_a_sub_run_of_its_own(peer: Peer) -> None:
    """A supervisor calls a sub-agent whose ``invoke_agent`` span OpenLLMetry wraps in a
    workflow span: two runs, the wrapped one not folded into the supervisor's."""
    agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
    answer = _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)})
    with peer.span("invoke_agent", {**agent, semconv.GEN_AI_AGENT_NAME: "outer"}):
        peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)}))
        with peer.span("workflow", WORKFLOW), peer.span("invoke_agent", agent):
            peer.span_once("chat", answer)
        peer.span_once("chat", answer)
    assert peer.value(semconv.AGENT_RUNS) == 2


def test_a_failed_wrapper_fails_the_invocation_it_wraps(peer: Peer) -> None:
    agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
    with peer.span("workflow", WORKFLOW) as wrapper, peer.span("invoke_agent", agent):
        peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
        wrapper.set_status(Status(StatusCode.ERROR))
    assert peer.value(semconv.AGENT_RUNS, **{semconv.RUN_OUTCOME: "error"}) == 1


CAP = {semconv.ERROR_TYPE: "langgraph.errors.GraphRecursionError"}
AGENT = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}


@pytest.mark.parametrize("where", ["wrapper", "node-between"])
def test_a_cap_recorded_around_a_wrapped_invocation_caps_it(peer: Peer, where: str) -> None:
    """The recursion error on the wrapper itself, or on a span that is no run between the
    wrapper and the invocation: the invocation is capped, once."""
    wrapper = {**WORKFLOW, **CAP} if where == "wrapper" else WORKFLOW
    node = CAP if where == "node-between" else {}
    with peer.span("workflow", wrapper), peer.span("node", node), peer.span("agent", AGENT):
        peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
    assert peer.verdict() == ("tool_calls_with_no_text", "recursion_limit", None)


def test_a_cap_below_a_wrapped_invocation_is_not_counted_again_above_it(peer: Peer) -> None:
    """A sub-agent capped inside an invocation that a workflow wraps, inside a supervisor:
    the error recorded on every span on its way up is the sub-agent's one bail."""
    tool_turn = _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)})
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
            peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
        for index in range(3):
            _tool(peer, json.dumps({"a": 0 if same else index}))
    assert peer.value(semconv.AGENT_RUNS) == 1
    assert repeated(peer.memory) == repeats
    assert looping(peer.memory) == (1 if same else 0)


def test_a_parent_that_ends_on_its_sub_agent_takes_the_sub_agents_stop_reason(
    peer: Peer,
) -> None:
    with peer.span("outer", {**AGENT, semconv.GEN_AI_AGENT_NAME: "outer"}):
        peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)}))
        with peer.span("inner", {**AGENT, semconv.GEN_AI_AGENT_NAME: "inner"}):
            peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("length",)}))
    stops = {
        attrs[semconv.GEN_AI_AGENT_NAME]: attrs[semconv.RUN_STOP_REASON]
        for attrs, value in peer.memory.points(semconv.STOP_REASONS.name)
        if value
    }
    assert stops == {"outer": "max_tokens", "inner": "max_tokens"}


def test_a_sub_agents_ending_is_no_model_call_of_the_parent(peer: Peer) -> None:
    with peer.span("outer", {**AGENT, semconv.GEN_AI_AGENT_NAME: "outer"}):
        peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)}))
        with peer.span("inner", {**AGENT, semconv.GEN_AI_AGENT_NAME: "inner"}):
            peer.span_once("chat", _chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
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
        peer.span_once("chat", _chat(**{semconv.TENANT_ID: "acme"}))
    assert peer.value(semconv.AGENT_RUNS, **{semconv.TENANT_ID: "acme"}) == 1
