"""Each branch of reading one finished span: its kind, its output, its finish reason, its tool
call and its step cap, on attributes spelled as each instrumentation spells them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import Event

from symfonic_otel import semconv
from symfonic_otel.core.loops import signature
from symfonic_otel.spans.reading import (
    MAX_JSON_CHARS,
    Kind,
    Output,
    call_output,
    final_output,
    finish_reasons,
    kind_of,
    metadata_value,
    read_span,
    tool_call,
)

OP = semconv.GEN_AI_OPERATION_NAME
OI = semconv.OPENINFERENCE_SPAN_KIND
TL = semconv.TRACELOOP_SPAN_KIND


def messages(*parts: dict[str, Any]) -> str:
    return json.dumps([{"role": "assistant", "parts": list(parts)}])


# --- kinds -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attributes", "is_root", "kind"),
    [
        ({OP: semconv.OP_CHAT}, False, Kind.CHAT),
        ({OP: semconv.OP_TEXT_COMPLETION}, False, Kind.CHAT),
        ({OP: semconv.OP_GENERATE_CONTENT}, False, Kind.CHAT),
        ({OP: semconv.OP_INVOKE_AGENT}, False, Kind.AGENT),
        ({OP: semconv.OP_INVOKE_WORKFLOW}, False, Kind.AGENT),
        ({OP: semconv.OP_EXECUTE_TOOL}, True, Kind.OTHER),
        ({OI: semconv.OPENINFERENCE_KIND_LLM}, False, Kind.CHAT),
        ({OI: semconv.OPENINFERENCE_KIND_AGENT}, False, Kind.AGENT),
        ({OI: semconv.OPENINFERENCE_KIND_CHAIN}, True, Kind.AGENT),
        ({OI: semconv.OPENINFERENCE_KIND_CHAIN}, False, Kind.OTHER),
        ({OI: semconv.OPENINFERENCE_KIND_TOOL}, True, Kind.OTHER),
        ({TL: semconv.TRACELOOP_KIND_WORKFLOW}, False, Kind.AGENT),
        ({TL: semconv.TRACELOOP_KIND_AGENT}, False, Kind.AGENT),
        ({TL: semconv.TRACELOOP_KIND_TOOL}, True, Kind.OTHER),
        ({semconv.TRACELOOP_REQUEST_TYPE: "chat"}, False, Kind.CHAT),
        ({semconv.TRACELOOP_REQUEST_TYPE: "completion"}, False, Kind.CHAT),
        ({semconv.TRACELOOP_REQUEST_TYPE: "embedding"}, True, Kind.OTHER),
        ({}, True, Kind.OTHER),
    ],
)
def test_each_vocabulary_names_its_span_kind(
    attributes: dict[str, Any], is_root: bool, kind: Kind
) -> None:
    assert kind_of(attributes, is_root) is kind


def test_the_genai_operation_outranks_the_other_vocabularies() -> None:
    # A chat span that OpenInference also calls an agent is a chat, and the other way round.
    assert kind_of({OP: semconv.OP_CHAT, OI: semconv.OPENINFERENCE_KIND_AGENT}, True) is Kind.CHAT
    assert kind_of({OP: semconv.OP_INVOKE_AGENT, OI: "LLM"}, True) is Kind.AGENT
    assert kind_of({OI: "LLM", TL: semconv.TRACELOOP_KIND_AGENT}, True) is Kind.CHAT
    assert kind_of({OI: "AGENT", semconv.TRACELOOP_REQUEST_TYPE: "chat"}, True) is Kind.AGENT


# --- read_span ---------------------------------------------------------------------------------


def test_a_chat_span_reads_its_first_cleaned_finish_reason_and_its_output() -> None:
    attributes = {
        OP: semconv.OP_CHAT,
        semconv.GEN_AI_RESPONSE_FINISH_REASONS: (" stop ", "length"),
        semconv.GEN_AI_OUTPUT_MESSAGES: messages({"type": "text", "content": "Hi"}),
        semconv.ERROR_TYPE: "GraphRecursionError",
    }
    reading = read_span(attributes, [], failed=True, is_root=True)
    assert reading.kind is Kind.CHAT
    assert reading.output is Output.TEXT
    assert reading.finish_reason == "stop"
    # A model call is never a failed run nor a step cap, whatever its status.
    assert (reading.failed, reading.step_cap, reading.nested, reading.name) == (
        False,
        False,
        False,
        None,
    )


def test_a_chat_span_without_finish_reasons_has_none() -> None:
    reading = read_span({OP: semconv.OP_CHAT}, [], failed=False, is_root=False)
    assert (reading.finish_reason, reading.output) == (None, Output.UNKNOWN)


def test_a_genai_agent_span_is_nested_named_and_carries_its_failure() -> None:
    attributes = {
        OP: semconv.OP_INVOKE_AGENT,
        semconv.GEN_AI_AGENT_NAME: "planner",
        semconv.GEN_AI_OUTPUT_MESSAGES: messages({"type": "text", "content": " "}),
    }
    reading = read_span(attributes, [], failed=True, is_root=False)
    assert reading.kind is Kind.AGENT
    assert reading.output is Output.BLANK
    assert reading.failed is True
    assert reading.nested is True
    assert reading.name == "planner"
    assert reading.step_cap is False
    assert read_span(attributes, [], failed=False, is_root=False).failed is False


def test_an_openinference_agent_span_is_no_nested_invocation() -> None:
    attributes = {OI: semconv.OPENINFERENCE_KIND_AGENT, semconv.GEN_AI_AGENT_NAME: "agent"}
    reading = read_span(attributes, [], failed=False, is_root=False)
    assert (reading.kind, reading.nested, reading.name) == (Kind.AGENT, False, "agent")


@pytest.mark.parametrize("name", [*sorted(semconv.DEFAULT_RUN_NAMES), 7, None])
def test_a_framework_default_or_non_text_agent_name_is_no_name(name: object) -> None:
    attributes = {OP: semconv.OP_INVOKE_AGENT, semconv.GEN_AI_AGENT_NAME: name}
    assert read_span(attributes, [], failed=False, is_root=True).name is None


def test_an_agent_span_records_a_step_cap_from_its_error_type() -> None:
    attributes = {OP: semconv.OP_INVOKE_AGENT, semconv.ERROR_TYPE: "agents.MaxTurnsExceeded"}
    assert read_span(attributes, [], failed=True, is_root=True).step_cap is True
    other = {OP: semconv.OP_INVOKE_AGENT, semconv.ERROR_TYPE: "ValueError"}
    assert read_span(other, [], failed=True, is_root=True).step_cap is False


def test_a_step_cap_is_read_from_any_exception_event_and_only_those() -> None:
    cap = {semconv.EXCEPTION_TYPE: "langgraph.errors.GraphRecursionError"}
    other = {semconv.EXCEPTION_TYPE: "ValueError"}
    agent = {OP: semconv.OP_INVOKE_AGENT}
    first_other = [Event(semconv.EXCEPTION_EVENT, other), Event(semconv.EXCEPTION_EVENT, cap)]
    assert read_span(agent, first_other, failed=True, is_root=True).step_cap is True
    # The same type on an event that is no exception is no step cap.
    assert read_span(agent, [Event("log", cap)], failed=True, is_root=True).step_cap is False
    assert read_span(agent, [Event(semconv.EXCEPTION_EVENT)], True, True).step_cap is False


def test_an_other_span_reads_its_step_cap_and_its_tool_call() -> None:
    attributes = {
        OP: semconv.OP_EXECUTE_TOOL,
        semconv.GEN_AI_TOOL_NAME: "add",
        semconv.GEN_AI_TOOL_CALL_ARGUMENTS: '{"a": 1}',
        semconv.ERROR_TYPE: "UsageLimitExceeded",
    }
    reading = read_span(attributes, [], failed=True, is_root=False)
    assert reading.kind is Kind.OTHER
    assert reading.step_cap is True
    assert reading.failed is False  # only a run span's failure is kept
    assert reading.tool_call == ("add", signature("add", '{"a": 1}'))
    assert reading.output is Output.UNKNOWN


# --- tool calls --------------------------------------------------------------------------------


def test_a_genai_tool_span_reads_its_arguments_then_the_traceloop_input() -> None:
    both = {
        OP: semconv.OP_EXECUTE_TOOL,
        semconv.GEN_AI_TOOL_NAME: "add",
        semconv.GEN_AI_TOOL_CALL_ARGUMENTS: '{"a": 1}',
        semconv.TRACELOOP_ENTITY_INPUT: '{"a": 2}',
    }
    assert tool_call(both) == ("add", signature("add", '{"a": 1}'))
    del both[semconv.GEN_AI_TOOL_CALL_ARGUMENTS]
    assert tool_call(both) == ("add", signature("add", '{"a": 2}'))


def test_an_openinference_tool_span_reads_its_tool_name_and_input_value() -> None:
    attributes = {
        OI: semconv.OPENINFERENCE_KIND_TOOL,
        semconv.OPENINFERENCE_TOOL_NAME: "search",
        semconv.OPENINFERENCE_INPUT_VALUE: '{"q": "x"}',
        semconv.GEN_AI_TOOL_NAME: "other",
        semconv.TRACELOOP_ENTITY_INPUT: '{"q": "y"}',
    }
    assert tool_call(attributes) == ("search", signature("search", '{"q": "x"}'))
    attributes[semconv.OPENINFERENCE_INPUT_VALUE] = semconv.OPENINFERENCE_REDACTED
    assert tool_call(attributes) is None


def test_a_traceloop_tool_span_reads_its_entity_name_and_input() -> None:
    attributes = {
        TL: semconv.TRACELOOP_KIND_TOOL,
        semconv.TRACELOOP_ENTITY_NAME: "lookup",
        semconv.TRACELOOP_ENTITY_INPUT: '{"k": 1}',
        semconv.GEN_AI_TOOL_NAME: "other",
    }
    assert tool_call(attributes) == ("lookup", signature("lookup", '{"k": 1}'))


def test_a_span_of_no_tool_vocabulary_has_no_tool_call() -> None:
    attributes = {
        semconv.GEN_AI_TOOL_NAME: "add",
        semconv.GEN_AI_TOOL_CALL_ARGUMENTS: "{}",
        semconv.TRACELOOP_ENTITY_NAME: "add",
        semconv.TRACELOOP_ENTITY_INPUT: "{}",
    }
    assert tool_call(attributes) is None


@pytest.mark.parametrize(
    ("name", "arguments"),
    [(None, "{}"), (3, "{}"), ("add", None), ("add", 3), ("add", "x" * (MAX_JSON_CHARS + 1))],
)
def test_a_tool_call_without_text_name_and_arguments_is_not_known(
    name: object, arguments: object
) -> None:
    attributes = {
        OP: semconv.OP_EXECUTE_TOOL,
        semconv.GEN_AI_TOOL_NAME: name,
        semconv.GEN_AI_TOOL_CALL_ARGUMENTS: arguments,
    }
    assert tool_call(attributes) is None


def test_arguments_at_the_size_limit_are_still_read() -> None:
    arguments = "x" * MAX_JSON_CHARS
    attributes = {
        OP: semconv.OP_EXECUTE_TOOL,
        semconv.GEN_AI_TOOL_NAME: "add",
        semconv.GEN_AI_TOOL_CALL_ARGUMENTS: arguments,
    }
    assert tool_call(attributes) == ("add", signature("add", arguments))


def test_a_langchain_tool_input_is_compared_by_its_input_string_alone() -> None:
    def call(run_id: str, text: str) -> tuple[str, int] | None:
        recorded = json.dumps({"input_str": text, "run_id": run_id, "tags": []})
        return tool_call(
            {
                TL: "tool",
                semconv.TRACELOOP_ENTITY_NAME: "add",
                semconv.TRACELOOP_ENTITY_INPUT: recorded,
            }
        )

    assert call("r1", "{'a': 1}") == call("r2", "{'a': 1}") == ("add", signature("add", "{'a': 1}"))
    assert call("r1", "{'a': 1}") != call("r1", "{'a': 2}")


def test_input_str_in_text_that_is_no_json_object_is_compared_whole() -> None:
    for arguments in ('not json "input_str"', '["input_str"]', '{"other": "input_str"}'):
        attributes = {
            OP: semconv.OP_EXECUTE_TOOL,
            semconv.GEN_AI_TOOL_NAME: "t",
            semconv.GEN_AI_TOOL_CALL_ARGUMENTS: arguments,
        }
        assert tool_call(attributes) == ("t", signature("t", arguments))


# --- finish reasons ----------------------------------------------------------------------------


def test_finish_reasons_come_from_the_first_vocabulary_that_has_one() -> None:
    keys = [
        semconv.GEN_AI_RESPONSE_FINISH_REASONS,
        semconv.OPENINFERENCE_FINISH_REASON,
        semconv.TRACELOOP_FINISH_REASON,
        f"{semconv.TRACELOOP_COMPLETIONS}0.finish_reason",
    ]
    attributes: dict[str, Any] = {key: f"reason{i}" for i, key in enumerate(keys)}
    for i, key in enumerate(keys):
        assert finish_reasons(attributes) == [f"reason{i}"]
        attributes[key] = ["  ", 3]  # present but nothing readable: the next one is read
    assert finish_reasons(attributes) == []


def test_finish_reasons_keep_every_readable_item_in_order() -> None:
    attributes = {semconv.GEN_AI_RESPONSE_FINISH_REASONS: ["stop", None, " length ", ""]}
    assert finish_reasons(attributes) == ["stop", "length"]
    assert finish_reasons({semconv.GEN_AI_RESPONSE_FINISH_REASONS: ("a", "b")}) == ["a", "b"]
    assert finish_reasons({semconv.GEN_AI_RESPONSE_FINISH_REASONS: {"stop"}}) == []
    assert finish_reasons({semconv.GEN_AI_RESPONSE_FINISH_REASONS: 5}) == []


# --- call outputs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parts", "output"),
    [
        ([{"type": "text", "content": "Hi"}], Output.TEXT),
        ([{"type": "output_text", "content": "Hi"}], Output.TEXT),
        ([{"type": "text", "content": "  "}], Output.BLANK),
        ([{"type": "text", "content": "Hi"}, {"type": "tool_call"}], Output.TEXT),
        ([{"type": "tool_call"}], Output.TOOL_CALLS),
        ([{"type": "function_call"}], Output.TOOL_CALLS),
        ([{"type": "tool_use"}], Output.TOOL_CALLS),
        ([{"type": "text", "content": ""}, {"type": "tool_call"}], Output.TOOL_CALLS),
        ([{"type": "text"}], Output.UNKNOWN),  # content not captured
        ([{"type": "text", "content": 3}], Output.UNKNOWN),
        ([{"type": "image"}], Output.TEXT),
        ([{"type": "blob"}], Output.TEXT),
        ([{"type": "uri"}], Output.TEXT),
        ([{"type": "file"}], Output.TEXT),
        ([{"type": "reasoning", "content": "thinking"}], Output.BLANK),
        ([{"type": "thinking", "content": "hm"}], Output.BLANK),
        ([{"type": "something"}], Output.UNKNOWN),
        (["not a part"], Output.UNKNOWN),
        ([], Output.BLANK),
    ],
)
def test_a_call_output_is_read_from_its_semconv_message_parts(
    parts: list[Any], output: Output
) -> None:
    attributes = {semconv.GEN_AI_OUTPUT_MESSAGES: messages(*parts)}
    assert call_output(attributes, []) is output


def test_a_text_part_after_a_blank_one_is_still_text() -> None:
    value = messages({"type": "text", "content": "Hi"}, {"type": "text", "content": " "})
    assert call_output({semconv.GEN_AI_OUTPUT_MESSAGES: value}, []) is Output.TEXT
    value = messages({"type": "text", "content": " "}, {"type": "text", "content": "Hi"})
    assert call_output({semconv.GEN_AI_OUTPUT_MESSAGES: value}, []) is Output.TEXT


@pytest.mark.parametrize(
    "value",
    [
        "not json",
        json.dumps({"parts": []}),
        json.dumps(["x"]),
        json.dumps([{"role": "assistant"}]),
        json.dumps([{"parts": "text"}]),
        3,
        "[" + " " * MAX_JSON_CHARS + "]",
    ],
)
def test_unreadable_output_messages_are_not_known(value: object) -> None:
    assert call_output({semconv.GEN_AI_OUTPUT_MESSAGES: value}, []) is Output.UNKNOWN


def test_messages_at_the_size_limit_are_still_read() -> None:
    value = messages({"type": "text", "content": "Hi"})
    value = value + " " * (MAX_JSON_CHARS - len(value))
    assert len(value) == MAX_JSON_CHARS
    assert call_output({semconv.GEN_AI_OUTPUT_MESSAGES: value}, []) is Output.TEXT


def test_an_unknown_message_beside_a_blank_one_makes_the_output_not_known() -> None:
    value = json.dumps([{"parts": [{"type": "text", "content": ""}]}, {"role": "x"}])
    assert call_output({semconv.GEN_AI_OUTPUT_MESSAGES: value}, []) is Output.UNKNOWN


@pytest.mark.parametrize("reason", ["tool_calls", "TOOL_USE", "tool_call", "function_call"])
def test_a_tool_finish_reason_makes_an_unrecorded_call_a_tool_call(reason: str) -> None:
    assert call_output({}, [reason]) is Output.TOOL_CALLS
    assert call_output({}, ["stop", reason]) is Output.TOOL_CALLS


def test_recorded_text_outranks_a_tool_finish_reason() -> None:
    attributes = {semconv.GEN_AI_OUTPUT_MESSAGES: messages({"type": "text", "content": "Hi"})}
    assert call_output(attributes, ["tool_calls"]) is Output.TEXT
    blank = {semconv.GEN_AI_OUTPUT_MESSAGES: messages({"type": "text", "content": ""})}
    assert call_output(blank, ["tool_calls"]) is Output.TOOL_CALLS


def test_a_finished_call_with_inputs_but_no_output_recorded_is_blank() -> None:
    inputs = {semconv.GEN_AI_INPUT_MESSAGES: "[]"}
    assert call_output(inputs, ["stop"]) is Output.BLANK
    # Without a finish reason, or without captured inputs, nothing is known.
    assert call_output(inputs, []) is Output.UNKNOWN
    assert call_output({}, ["stop"]) is Output.UNKNOWN
    # An output that is recorded (even unreadably) is no missing one.
    both = {**inputs, semconv.GEN_AI_OUTPUT_MESSAGES: "not json"}
    assert call_output(both, ["stop"]) is Output.UNKNOWN


def test_semconv_messages_outrank_flattened_ones() -> None:
    attributes = {
        semconv.GEN_AI_OUTPUT_MESSAGES: messages({"type": "text", "content": ""}),
        f"{semconv.OPENINFERENCE_OUTPUT_MESSAGES}0.message.content": "Hi",
    }
    assert call_output(attributes, []) is Output.BLANK


@pytest.mark.parametrize(
    "prefix", [semconv.OPENINFERENCE_OUTPUT_MESSAGES, semconv.TRACELOOP_COMPLETIONS]
)
@pytest.mark.parametrize(
    ("fields", "output"),
    [
        ({"0.message.content": "Hi"}, Output.TEXT),
        ({"0.content": "Hi"}, Output.TEXT),
        ({"0.message.contents.0.message_content.text": "Hi"}, Output.TEXT),
        ({"0.message.role": "assistant"}, Output.BLANK),
        ({"0.message.content": "  "}, Output.BLANK),
        ({"0.content": 3}, Output.BLANK),
        (
            {"0.message.role": "assistant", "0.message.tool_calls.0.function.name": "f"},
            Output.TOOL_CALLS,
        ),
        ({"0.function_call.name": "f"}, Output.TOOL_CALLS),
        ({"0.message.content": "Hi", "0.message.tool_calls.0.id": "c"}, Output.TEXT),
        ({"0.message.content": "", "1.message.content": "Hi"}, Output.TEXT),
        ({"0.message.content": "Hi", "1.message.content": ""}, Output.TEXT),
        ({"0.finish_reason": "stop"}, Output.UNKNOWN),
    ],
)
def test_flattened_messages_read_as_each_instrumentation_writes_them(
    prefix: str, fields: dict[str, Any], output: Output
) -> None:
    attributes = {f"{prefix}{key}": value for key, value in fields.items()}
    assert call_output(attributes, []) is output


def test_flattened_keys_of_another_prefix_are_ignored() -> None:
    attributes = {"llm.input_messages.0.message.content": "Hi", "gen_ai.prompt.0.role": "user"}
    assert call_output(attributes, []) is Output.UNKNOWN


# --- final outputs -----------------------------------------------------------------------------


def test_a_run_final_output_is_read_from_its_messages_first() -> None:
    text = {semconv.GEN_AI_OUTPUT_MESSAGES: messages({"type": "text", "content": "Done"})}
    assert final_output({**text, semconv.PYDANTIC_AI_FINAL_RESULT: ""}) is Output.TEXT
    blank = {semconv.GEN_AI_OUTPUT_MESSAGES: messages({"type": "text", "content": ""})}
    assert final_output({**blank, semconv.PYDANTIC_AI_FINAL_RESULT: "Done"}) is Output.BLANK


def test_a_run_ending_on_tool_calls_reads_its_final_result_instead() -> None:
    tools = {semconv.GEN_AI_OUTPUT_MESSAGES: messages({"type": "tool_call"})}
    assert final_output(tools) is Output.UNKNOWN
    assert final_output({**tools, semconv.PYDANTIC_AI_FINAL_RESULT: "Done"}) is Output.TEXT
    assert final_output({**tools, semconv.PYDANTIC_AI_FINAL_RESULT: " "}) is Output.BLANK


def test_a_pydantic_ai_final_result_outranks_openinference_output() -> None:
    attributes = {
        semconv.PYDANTIC_AI_FINAL_RESULT: "",
        semconv.OPENINFERENCE_OUTPUT_VALUE: "Done",
        semconv.OPENINFERENCE_OUTPUT_MIME_TYPE: "text/plain",
    }
    assert final_output(attributes) is Output.BLANK
    attributes[semconv.PYDANTIC_AI_FINAL_RESULT] = 5
    assert final_output(attributes) is Output.TEXT


def test_openinference_output_counts_only_as_plain_text() -> None:
    def output(value: object, mime: object) -> Output:
        return final_output(
            {
                semconv.OPENINFERENCE_OUTPUT_VALUE: value,
                semconv.OPENINFERENCE_OUTPUT_MIME_TYPE: mime,
            }
        )

    assert output("Done", "text/plain") is Output.TEXT
    assert output("  ", "text/plain") is Output.BLANK
    assert output("", "application/json") is Output.UNKNOWN
    assert output('{"a": 1}', "application/json") is Output.UNKNOWN
    assert output(3, "text/plain") is Output.UNKNOWN
    assert final_output({}) is Output.UNKNOWN


# --- metadata ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "found"),
    [
        (json.dumps({"tenant_id": "acme"}), "acme"),
        (json.dumps({"tenant_id": 42}), "42"),
        (json.dumps({"tenant_id": 1.5}), "1.5"),
        (json.dumps({"tenant_id": True}), None),
        (json.dumps({"tenant_id": ""}), None),
        (json.dumps({"tenant_id": None}), None),
        (json.dumps({"tenant_id": ["a"]}), None),
        (json.dumps({"other": "tenant_id"}), None),
        (json.dumps(["tenant_id"]), None),
        ('{"tenant_id": ', None),
        (json.dumps({"user": "acme"}), None),
        (3, None),
        (json.dumps({"tenant_id": "a" * MAX_JSON_CHARS}), None),
    ],
)
def test_a_metadata_value_is_read_only_as_text_or_a_number(
    value: object, found: str | None
) -> None:
    assert metadata_value(value, "tenant_id") == found
