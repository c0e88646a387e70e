"""Tool calls, step caps and tenants as the span processor reads them off each vocabulary.

A tool span counts toward a repeated-call loop only when it records its name and arguments as
text: OpenLLMetry's ``tool`` spans as ``traceloop.entity.input`` (LangChain's callback input, of
which only ``input_str`` is the call's), and no argument text past the JSON bound. A step cap is
read from the run span's exception events, whatever other events come first. A tenant attribute
is a non-empty text or a number; a flag or an empty text is no tenant.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.spans.reading import MAX_JSON_CHARS
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.loop_support import looping, repeated
from tests.support.span_peer import AGENT, Peer, chat

ANSWER = chat(**{semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("stop",)})


@pytest.fixture
def peer(telemetry: InMemoryTelemetry) -> Peer:
    return Peer(telemetry)


def _tool_calls(peer: Peer, *inputs: str, name: str = "add") -> None:
    """An agent run calling the OpenLLMetry-recorded tool ``name`` once per input, then
    answering."""
    with peer.span("invoke_agent", AGENT):
        for recorded in inputs:
            peer.span_once(
                f"{name}.tool",
                {
                    semconv.TRACELOOP_SPAN_KIND: semconv.TRACELOOP_KIND_TOOL,
                    semconv.TRACELOOP_ENTITY_NAME: name,
                    semconv.TRACELOOP_ENTITY_INPUT: recorded,
                },
            )
        peer.span_once("chat", ANSWER)


# --- tool calls ----------------------------------------------------------------------------


def test_openllmetry_tool_spans_with_one_input_three_times_are_a_loop(peer: Peer) -> None:
    _tool_calls(peer, '{"a": 1}', '{"a": 1}', '{"a": 1}')
    assert looping(peer.memory, semconv.LOOP_REPEATED_TOOL_CALL) == 1
    assert repeated(peer.memory) == 2


def test_openllmetry_tool_spans_with_other_inputs_are_no_loop(peer: Peer) -> None:
    _tool_calls(peer, '{"a": 1}', '{"a": 2}', '{"a": 3}')
    assert looping(peer.memory) == 0
    assert repeated(peer.memory) == 0


@pytest.mark.parametrize(("asked", "loops"), [(["1 + 1"] * 3, 1), (["1 + 1", "1 + 2", "2 + 2"], 0)])
def test_langchain_inputs_are_compared_on_input_str_alone(
    peer: Peer, asked: list[str], loops: int
) -> None:
    inputs = [json.dumps({"input_str": text, "run_id": run}) for run, text in enumerate(asked)]
    _tool_calls(peer, *inputs)
    assert looping(peer.memory, semconv.LOOP_REPEATED_TOOL_CALL) == loops


@pytest.mark.parametrize(
    "inputs",
    [
        ['{"input_str": "1 + 1", broken', '{"input_str": "1 + 1", cut', '{"input_str": "1 + 1"'],
        [json.dumps({"meta": {"input_str": "1 + 1"}, "run_id": run}) for run in range(3)],
    ],
    ids=["not-json", "input_str-nested"],
)
def test_an_input_naming_input_str_that_is_no_langchain_input_is_compared_whole(
    peer: Peer, inputs: list[str]
) -> None:
    _tool_calls(peer, *inputs)
    assert looping(peer.memory) == 0
    assert peer.memory.value(semconv.DROPPED_EVENTS.name) == 0


def test_a_malformed_langchain_input_repeated_is_still_a_loop(peer: Peer) -> None:
    _tool_calls(peer, *['{"input_str": "1 + 1", broken'] * 3)
    assert looping(peer.memory, semconv.LOOP_REPEATED_TOOL_CALL) == 1


@pytest.mark.parametrize(("extra", "loops"), [(0, 1), (1, 0)])
def test_tool_arguments_are_read_up_to_the_json_bound_and_not_past_it(
    peer: Peer, extra: int, loops: int
) -> None:
    arguments = json.dumps({"a": "x" * (MAX_JSON_CHARS - len('{"a": ""}') + extra)})
    assert len(arguments) == MAX_JSON_CHARS + extra
    _tool_calls(peer, arguments, arguments, arguments)
    assert looping(peer.memory) == loops


@pytest.mark.parametrize(
    "recorded",
    [
        {semconv.GEN_AI_TOOL_NAME: "add"},
        {semconv.GEN_AI_TOOL_NAME: "add", semconv.GEN_AI_TOOL_CALL_ARGUMENTS: 7},
        {semconv.GEN_AI_TOOL_CALL_ARGUMENTS: '{"a": 1}'},
        {semconv.GEN_AI_TOOL_NAME: 7, semconv.GEN_AI_TOOL_CALL_ARGUMENTS: '{"a": 1}'},
    ],
    ids=["no-arguments", "arguments-no-text", "no-name", "name-no-text"],
)
def test_a_tool_span_without_a_text_name_and_text_arguments_is_no_compared_call(
    peer: Peer, recorded: dict[str, AttributeValue]
) -> None:
    """Three ``execute_tool`` spans that lack the name or the arguments as text (content
    capture off, or an instrumentation's own types): no repeat, no loop, nothing lost, and the
    run is counted."""
    with peer.span("invoke_agent", AGENT):
        for _ in range(3):
            peer.span_once(
                "execute_tool", {semconv.GEN_AI_OPERATION_NAME: semconv.OP_EXECUTE_TOOL, **recorded}
            )
        peer.span_once("chat", ANSWER)
    assert looping(peer.memory) == 0
    assert repeated(peer.memory) == 0
    assert peer.memory.value(semconv.DROPPED_EVENTS.name) == 0
    assert peer.value(semconv.AGENT_RUNS) == 1


def _genai_fallback(arguments: str) -> dict[str, AttributeValue]:
    """OpenLLMetry's ``execute_tool`` span: the arguments as its entity input."""
    return {
        semconv.GEN_AI_OPERATION_NAME: semconv.OP_EXECUTE_TOOL,
        semconv.GEN_AI_TOOL_NAME: "add",
        semconv.TRACELOOP_ENTITY_INPUT: arguments,
    }


def _openinference(arguments: str) -> dict[str, AttributeValue]:
    return {
        semconv.OPENINFERENCE_SPAN_KIND: semconv.OPENINFERENCE_KIND_TOOL,
        semconv.OPENINFERENCE_TOOL_NAME: "add",
        semconv.OPENINFERENCE_INPUT_VALUE: arguments,
    }


@pytest.mark.parametrize("shape", [_genai_fallback, _openinference])
@pytest.mark.parametrize(("arguments", "loops"), [(["1"] * 3, 1), (["1", "2", "3"], 0)])
def test_tool_spans_of_each_vocabulary_are_compared_on_their_arguments(
    peer: Peer, shape: Any, arguments: list[str], loops: int
) -> None:
    with peer.span("invoke_agent", AGENT):
        for recorded in arguments:
            peer.span_once("tool", shape(recorded))
        peer.span_once("chat", ANSWER)
    assert looping(peer.memory, semconv.LOOP_REPEATED_TOOL_CALL) == loops


# --- step caps from exception events -------------------------------------------------------


def test_a_step_cap_exception_event_after_other_events_caps_the_run(peer: Peer) -> None:
    with peer.span("invoke_agent", AGENT) as run:
        peer.span_once("chat", ANSWER)
        run.add_event("progress", {semconv.EXCEPTION_TYPE: "ValueError"})
        run.add_event(semconv.EXCEPTION_EVENT, {semconv.EXCEPTION_TYPE: "ValueError"})
        run.add_event(
            semconv.EXCEPTION_EVENT,
            {semconv.EXCEPTION_TYPE: "langgraph.errors.GraphRecursionError"},
        )
    assert peer.verdict() == ("tool_calls_with_no_text", "recursion_limit", None)


def test_a_step_cap_type_on_an_event_that_is_no_exception_is_no_cap(peer: Peer) -> None:
    with peer.span("invoke_agent", AGENT) as run:
        peer.span_once("chat", ANSWER)
        run.add_event("log", {semconv.EXCEPTION_TYPE: "langgraph.errors.GraphRecursionError"})
    assert peer.verdict() == (None, "end_turn", None)


# --- tenant attribute values ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("recorded", "tenant"),
    [
        ({"org": "", "tenant_id": "acme"}, "acme"),
        ({"org": True, "tenant_id": "acme"}, "acme"),
        ({"org": False}, "unknown"),
        ({"org": 2.5, "tenant_id": "acme"}, "2.5"),
        ({"org": 0}, "0"),
    ],
)
def test_a_tenant_attribute_is_a_non_empty_text_or_a_number(
    telemetry: InMemoryTelemetry, recorded: dict[str, AttributeValue], tenant: str
) -> None:
    peer = Peer(telemetry, tenant_attributes=("org", "tenant_id"))
    peer.agent_run(ANSWER, recorded)
    assert peer.value(semconv.AGENT_RUNS, **{semconv.TENANT_ID: tenant}) == 1
