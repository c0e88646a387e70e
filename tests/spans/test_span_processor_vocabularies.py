"""Each vocabulary the span processor reads, one witness at a time: the verdict it gives.

Spans written the way GenAI semantic conventions, OpenInference and OpenLLMetry name things
(the shapes ``test_span_processor_peers`` checks against the real instrumentations), each
carrying a single piece of evidence, so that every name and every rule is seen to decide the
run's bail, stop reason, blank flag or label on its own.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.spans.reading import MAX_JSON_CHARS
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.span_peer import Peer, chat, parts

OI_MESSAGES = semconv.OPENINFERENCE_OUTPUT_MESSAGES
COMPLETIONS = semconv.TRACELOOP_COMPLETIONS


@pytest.fixture
def peer(telemetry: InMemoryTelemetry) -> Peer:
    return Peer(telemetry)


# --- the parts of gen_ai.output.messages -------------------------------------------------------


@pytest.mark.parametrize(
    ("message_parts", "bail", "empty"),
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
    peer: Peer, message_parts: list[dict[str, Any]], bail: str | None, empty: bool | None
) -> None:
    peer.agent_run(
        chat(
            **{
                semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("end_turn",),
                semconv.GEN_AI_OUTPUT_MESSAGES: parts(*message_parts),
            }
        )
    )
    assert peer.verdict()[0] == bail
    assert peer.verdict()[2] == empty


def test_a_message_without_parts_leaves_the_answer_unknown(peer: Peer) -> None:
    messages = json.dumps([{"role": "assistant"}, {"role": "assistant", "parts": []}])
    peer.agent_run(chat(**{semconv.GEN_AI_OUTPUT_MESSAGES: messages}))
    assert peer.verdict() == (None, None, None)


def test_a_message_without_parts_leaves_the_text_of_the_next_one_readable(peer: Peer) -> None:
    messages = json.dumps(
        [{"role": "assistant"}, {"role": "assistant", "parts": [{"type": "text", "content": "hi"}]}]
    )
    peer.agent_run(chat(**{semconv.GEN_AI_OUTPUT_MESSAGES: messages}))
    assert peer.verdict() == (None, None, False)


@pytest.mark.parametrize(
    "messages",
    ['[{"role": "assistant", "parts": [', json.dumps({"role": "assistant", "parts": []})],
    ids=["not-json", "no-list"],
)
def test_output_messages_that_are_no_json_list_say_nothing(peer: Peer, messages: str) -> None:
    peer.agent_run(
        chat(
            **{
                semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",),
                semconv.GEN_AI_OUTPUT_MESSAGES: messages,
            }
        )
    )
    assert peer.verdict() == (None, "end_turn", None)


# --- finish reasons ------------------------------------------------------------------------


@pytest.mark.parametrize("finish", ["tool_calls", "tool_call", "tool_use", "function_call"])
def test_every_tool_finish_reason_ends_the_run_on_tool_calls(peer: Peer, finish: str) -> None:
    peer.agent_run(chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: (finish.upper(),)}))
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
        (
            {
                semconv.GEN_AI_RESPONSE_FINISH_REASONS: (7,),
                semconv.OPENINFERENCE_FINISH_REASON: "length",
            },
            "max_tokens",
        ),
        ({semconv.GEN_AI_RESPONSE_FINISH_REASONS: (0, 1)}, None),
    ],
)
def test_the_finish_reason_is_read_from_each_vocabulary_in_order(
    peer: Peer, attributes: dict[str, AttributeValue], stop: str | None
) -> None:
    """The first vocabulary with a text reason decides; numbers are no finish reasons."""
    peer.agent_run(chat(**attributes))
    assert peer.verdict()[1] == stop


def test_a_call_with_input_but_no_output_recorded_said_nothing(peer: Peer) -> None:
    """util-genai records output messages only when there is output: with the input on the
    span (content capture on), no output is a blank answer; without it, not known."""
    recorded_input = parts({"type": "text", "content": "question"})
    peer.agent_run(
        chat(
            **{
                semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",),
                semconv.GEN_AI_INPUT_MESSAGES: recorded_input,
            }
        )
    )
    assert peer.verdict() == ("no_content_no_tool_calls", "end_turn", True)


def test_input_alone_without_a_finish_reason_is_no_blank_answer(peer: Peer) -> None:
    peer.agent_run(chat(**{semconv.GEN_AI_INPUT_MESSAGES: "[]"}))
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
    peer.agent_run(chat(**attributes))
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
        peer.span_once("chat", chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}))
    assert peer.value(semconv.AGENT_RUNS) == 1


def test_a_chain_is_a_run_only_at_the_root(peer: Peer) -> None:
    chain = {semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_KIND_CHAIN}
    call = chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",)})
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
        ({semconv.GEN_AI_OUTPUT_MESSAGES: parts({"type": "text", "content": "hi"})}, None, False),
        (
            {
                semconv.GEN_AI_OUTPUT_MESSAGES: parts({"type": "tool_call"}),
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
    peer.agent_run(chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)}), agent)
    assert peer.verdict() == (bail, "end_turn", empty)


@pytest.mark.parametrize(("name", "label"), [("planner", "planner"), ("LangGraph", "symfonic")])
def test_the_agent_name_on_the_run_span_labels_the_run(peer: Peer, name: str, label: str) -> None:
    peer.agent_run(chat(), {semconv.GEN_AI_AGENT_NAME: name})
    [(attrs, _)] = peer.memory.points(semconv.AGENT_RUNS.name)
    assert attrs[semconv.GEN_AI_AGENT_NAME] == label


@pytest.mark.parametrize(("recorded", "tenant"), [(42, "42"), (2.5, "2.5"), ("acme", "acme")])
def test_a_metadata_tenant_of_any_scalar_type_is_read(
    telemetry: InMemoryTelemetry, recorded: object, tenant: str
) -> None:
    peer = Peer(telemetry, tenant_metadata_key="tenant_id")
    peer.agent_run(chat(), {semconv.OPENINFERENCE_METADATA: json.dumps({"tenant_id": recorded})})
    assert peer.value(semconv.AGENT_RUNS, **{semconv.TENANT_ID: tenant}) == 1


@pytest.mark.parametrize("recorded", ["", True, None, [1], '{"tenant_id": oops'])
def test_a_metadata_tenant_that_is_no_scalar_is_unknown(
    telemetry: InMemoryTelemetry, recorded: object
) -> None:
    peer = Peer(telemetry, tenant_metadata_key="tenant_id")
    metadata = recorded if recorded == '{"tenant_id": oops' else json.dumps({"tenant_id": recorded})
    peer.agent_run(chat(), {semconv.OPENINFERENCE_METADATA: str(metadata)})
    assert peer.value(semconv.AGENT_RUNS, **{semconv.TENANT_ID: "unknown"}) == 1


def test_a_metadata_attribute_of_no_text_type_reads_as_no_tenant(
    telemetry: InMemoryTelemetry,
) -> None:
    peer = Peer(telemetry, tenant_metadata_key="tenant_id")
    peer.agent_run(chat(), {semconv.OPENINFERENCE_METADATA: 7})
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
    peer.agent_run(chat(), {semconv.OPENINFERENCE_METADATA: metadata})
    assert peer.value(semconv.AGENT_RUNS, **{semconv.TENANT_ID: tenant}) == 1


@pytest.mark.parametrize(
    ("extra", "verdict"), [(0, ("no_content_no_tool_calls", True)), (1, (None, None))]
)
def test_output_messages_are_read_up_to_the_json_bound_and_not_past_it(
    peer: Peer, extra: int, verdict: tuple[str | None, bool | None]
) -> None:
    # A blank answer padded with spaces: read, it is a silent bail; one character past the
    # bound it is not read at all, so nothing is known of it (neither blank nor an answer).
    bare = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": ""}]}])
    content = " " * (MAX_JSON_CHARS - len(bare) + extra)
    output = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": content}]}])
    assert len(output) == MAX_JSON_CHARS + extra
    peer.agent_run(
        chat(
            **{
                semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",),
                semconv.GEN_AI_OUTPUT_MESSAGES: output,
            }
        )
    )
    bail, _, empty = peer.verdict()
    assert (bail, empty) == verdict
