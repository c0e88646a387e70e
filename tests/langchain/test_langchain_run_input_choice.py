"""Which part of a run's input is its captured query (content capture on): the last human
message of a message list, not the first; the ``input`` key of a mapping before ``query`` and
``question``. Driven through the handler's chain callbacks."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def _captured_query(telemetry: InMemoryTelemetry, inputs: Any) -> str:
    lc = LangChainCallbackHandler(handler=telemetry.handler(capture_content=True))
    root = uuid4()
    lc.on_chain_start({}, inputs, run_id=root)
    lc.on_chain_end({"messages": [AIMessage("done")]}, run_id=root)
    (span,) = [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
    return str((span.attributes or {})[semconv.GEN_AI_INPUT_MESSAGES])


def test_the_query_is_the_last_human_message(telemetry: InMemoryTelemetry) -> None:
    history = [HumanMessage("first question"), AIMessage("answer"), HumanMessage("follow-up")]
    text = _captured_query(telemetry, {"messages": history})
    assert "follow-up" in text and "first question" not in text


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        ({"question": "from question", "query": "from query", "input": "from input"}, "input"),
        ({"question": "from question", "query": "from query"}, "query"),
    ],
)
def test_the_input_key_comes_before_query_and_question(
    telemetry: InMemoryTelemetry, inputs: dict[str, str], expected: str
) -> None:
    text = _captured_query(telemetry, inputs)
    assert f"from {expected}" in text
    assert all(
        f"from {other}" not in text for other in ("input", "query", "question") if other != expected
    )
