"""The Agents SDK span-data readers: every output shape the SDK's models record, by structure."""

from __future__ import annotations

from typing import Any

import pytest

from symfonic_otel.openai_agents import read
from tests.support.openai_agents_support import ScriptedModel

CALL = {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"}
TEXT = {"type": "message", "content": [{"type": "output_text", "text": "Sunny."}]}
BLANK = {"type": "message", "content": [{"type": "output_text", "text": "  "}]}


@pytest.mark.parametrize(
    ("output", "text", "tool_calls", "blank"),
    [
        ([{"role": "assistant", "content": "Sunny.", "tool_calls": None}], "Sunny.", 0, False),
        ([{"role": "assistant", "content": None, "tool_calls": [{"id": "c"}] * 2}], "", 2, True),
        ([{"role": "assistant", "content": [{"type": "text", "text": "Hi"}]}], "Hi", 0, False),
        ([{"role": "assistant", "content": ""}], "", 0, True),
        ([TEXT, CALL], "Sunny.", 1, False),  # Responses-API items
        ([{"output": [BLANK], "model": "m"}], "  ", 0, True),  # a ``Response.model_dump()``
        ([{"output": [CALL, CALL]}], "", 2, True),
        ([{"type": "computer_call"}], "", 1, True),  # hosted tools ask for a tool too
        ([], "", 0, True),
    ],
)
def test_output_shapes(output: Any, text: str, tool_calls: int, blank: bool) -> None:
    shape = read.output_shape(output)
    assert shape is not None
    assert (shape.text, shape.tool_calls, shape.blank) == (text, tool_calls, blank)
    assert shape.finish_reason == ("tool_calls" if tool_calls else "stop")


def test_a_response_object_is_read_and_no_output_is_unknown() -> None:
    model = ScriptedModel(["Sunny."])
    output, _ = model._turn()
    shape = read.output_shape(None, model._response(output))
    assert shape is not None and shape.text == "Sunny." and shape.tool_calls == 0
    assert read.output_shape(None) is None  # the SDK recorded no output (no traced data)


@pytest.mark.parametrize(
    "hostile",
    [{"content": 3, "tool_calls": "x"}, 42, None, {"output": "not a list"}, [{"content": [7]}]],
)
def test_hostile_payloads_read_as_blank_or_unknown(hostile: Any) -> None:
    shape = read.output_shape([hostile])
    assert shape is not None and shape.tool_calls == 0


def test_text_is_bounded() -> None:
    shape = read.output_shape([{"role": "assistant", "content": "x" * 200_000}])
    assert shape is not None and len(shape.text) == 65_536


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        ({"message": "Max turns exceeded", "data": {"max_turns": 3}}, "max_turns"),
        ({"message": "anything at all", "data": {"max_turns": 3}}, "max_turns"),  # keys, not text
        ({"message": "Guardrail tripwire triggered", "data": {"guardrail": "g"}}, "guardrail"),
        ({"message": "Max turns exceeded", "data": {"error": "redacted"}}, "error"),
        ({"message": "x", "data": None}, "error"),
        (None, None),
        ("not a mapping", None),
    ],
)
def test_run_errors_are_read_from_the_data_keys(error: Any, kind: str | None) -> None:
    assert read.run_error(error) == kind


def test_usage_falls_back_to_the_response_object() -> None:
    model = ScriptedModel(["Sunny."])
    response = model._response(model._turn()[0])
    assert read.usage(None, response.usage) == {"input_tokens": 12, "output_tokens": 4}
    assert read.usage({"prompt_tokens": 3, "completion_tokens": 1}) == {
        "input_tokens": 3,
        "output_tokens": 1,
    }
    assert read.usage({"input_tokens": -1, "output_tokens": True}, None) == {}
