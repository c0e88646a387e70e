"""Step readers and sanitisers where one of two values must win.

A tool start names its tool by ``tool_name`` before the generic ``name`` and takes its
arguments from ``arguments`` before a framework's ``input``; a node that did not fail keeps no
error message; a step-cap error is recognised by its class name, dotted or not; a label cut at
its cap loses the blank the cut left at its end; a sequence of ints and floats becomes floats.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from symfonic_otel.read.extract_steps import node_step, tool_start
from symfonic_otel.read.sanitise import clean_attributes, clean_label
from symfonic_otel.read.step_caps import is_step_cap_type


@dataclass
class _Start:
    tool_name: str = "lookup"
    name: str = "generic"
    arguments: object = None
    input: object = None
    run_id: str = "r1"
    tool_call_id: str = "c1"


@dataclass
class _Node:
    node_name: str = "react"
    error: str = "the message"
    error_type: str = "ValueError"
    run_id: str = "r1"


def test_a_tool_start_is_named_by_its_tool_name_before_its_generic_name() -> None:
    assert tool_start(_Start()).name == "lookup"
    assert tool_start(_Start(tool_name="")).name == "generic"


def test_a_tool_start_takes_its_arguments_before_a_framework_s_input() -> None:
    assert tool_start(_Start(arguments={"a": 1}, input={"b": 2})).arguments == {"a": 1}
    assert tool_start(_Start(input={"b": 2})).arguments == {"b": 2}


def test_a_node_that_did_not_fail_keeps_no_error_message_or_type() -> None:
    ended = node_step(_Node())
    assert (ended.message, ended.error_type) == ("", None)
    failed = node_step(_Node(), failed=True)
    assert (failed.message, failed.error_type) == ("the message", "ValueError")


@pytest.mark.parametrize(
    ("value", "is_cap"),
    [
        ("langgraph.errors.GraphRecursionError", True),
        ("GraphRecursionError", True),
        ("agents.exceptions.MaxTurnsExceeded", True),
        ("builtins.RecursionError", False),
        (None, False),
    ],
)
def test_a_step_cap_error_is_recognised_by_its_class_name(value: object, is_cap: bool) -> None:
    assert is_step_cap_type(value) is is_cap


def test_a_label_cut_at_its_cap_loses_the_blank_the_cut_left() -> None:
    assert clean_label("a" * 9 + " bcd", 10) == "a" * 9


def test_a_sequence_of_ints_and_floats_becomes_floats() -> None:
    [(key, value)] = clean_attributes({"k": [1, 2.5]}).items()
    assert key == "k" and value == (1.0, 2.5)
    assert all(type(item) is float for item in value)  # type: ignore[union-attr]
