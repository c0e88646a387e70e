"""What the Agno adapter reads of a run's messages, on Agno's own ``Message`` objects.

A run's context replays earlier runs' messages (``from_history``): only this run's assistant
turns are its model calls. Agno's metrics default every count to 0, so a 0 is "not reported".
A structured output is an answer whatever its text.
"""

from __future__ import annotations

from agno.metrics import MessageMetrics
from agno.models.message import Message
from pydantic import BaseModel

from symfonic_otel.agno.read import answer_of, run_turns, tool_call_count, usage_of

_CALL = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}


def test_assistant_turns_replayed_from_history_are_not_this_runs() -> None:
    old = Message(role="assistant", content="Earlier answer.", tool_calls=[_CALL])
    old.from_history = True
    new = Message(role="assistant", tool_calls=[_CALL])
    messages = [Message(role="user", content="q"), old, new, Message(role="tool", content="r")]
    assert run_turns(messages) == [new]
    assert tool_call_count(run_turns(messages)) == 1


def test_counts_agno_left_at_zero_are_not_reported() -> None:
    unreported = Message(role="assistant", content="x")
    assert usage_of(unreported) == {}
    reported = Message(
        role="assistant", content="x", metrics=MessageMetrics(input_tokens=12, output_tokens=0)
    )
    assert usage_of(reported) == {"input_tokens": 12}


class _Forecast(BaseModel):
    sky: str


def test_a_structured_output_is_an_answer_and_no_output_is_none() -> None:
    assert answer_of(_Forecast(sky="clear")) == "<structured>"
    assert answer_of(None) == ""
    assert answer_of("It is sunny.") == "It is sunny."
