"""Structured output on the real LangChain / LangGraph: tool-calling, JSON mode, graph nodes.

``with_structured_output`` alone and inside a graph, JSON-mode parsers, ``create_react_agent``'s
``response_format``: a run whose structured answer exists is answered (never a silent bail), and
its captured output is that answer. Streaming is in ``test_langchain_agent_streaming.py``,
multi-turn runs in ``test_langchain_agent_turns.py``, where the handler sits in
``test_langchain_agent_placement.py``, sub-graphs, fan-out and concurrency in
``test_langchain_agent_topologies.py``, tool shapes in ``test_langchain_agent_tools.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.output_parsers import (
    JsonOutputParser,
    PydanticOutputParser,
)
from langgraph.graph import END, START, MessagesState, StateGraph

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_shapes_support import (
    MODES,
    Tree,
    Weather,
    assert_answered,
    assert_clean,
    assert_no_content,
    attrs,
    cfg,
    messages,
    run_with,
    texts,
    weather_call,
)
from tests.support.langchain_support import (
    AGENT_SPAN,
    add,
    react_agent,
    tool_turn,
)

# --- structured output ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_with_structured_output_tool_calling_is_an_answered_run(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler, mode: str
) -> None:
    model = ScriptedChatModel([weather_call()])
    result = run_with(
        mode, model.with_structured_output(Weather), "Weather in Paris?", config=cfg(captured)
    )
    assert result == Weather(city="Paris", temp_c=21)

    tree = Tree(telemetry.spans())
    root = tree.one(AGENT_SPAN)
    (chat,) = tree.children(root)
    assert chat.name == "chat scripted-chat"
    assert_answered(telemetry)
    (answer,) = messages(root)
    assert json.loads(answer["parts"][0]["content"]) == {"city": "Paris", "temp_c": 21}
    (reply,) = messages(chat)
    assert reply["parts"][0]["type"] == "tool_call" and reply["parts"][0]["name"] == "Weather"
    definitions = json.loads(str(attrs(chat)[semconv.GEN_AI_TOOL_DEFINITIONS]))
    assert [d["name"] for d in definitions] == ["Weather"]


def test_with_structured_output_include_raw_is_answered(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel([weather_call()])
    structured = model.with_structured_output(Weather, include_raw=True)
    result = structured.invoke("Weather in Paris?", config=cfg(captured))
    assert result["parsed"] == Weather(city="Paris", temp_c=21)
    assert_answered(telemetry)
    assert "Paris" in str(attrs(telemetry.span(AGENT_SPAN))[semconv.GEN_AI_OUTPUT_MESSAGES])


@pytest.mark.parametrize("parser", ["json", "pydantic"])
def test_json_mode_output_parsed_is_an_answered_run(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler, parser: str
) -> None:
    """JSON mode / json_schema: the model bound to a response format, its text parsed."""
    model = ScriptedChatModel([json.dumps({"city": "Paris", "temp_c": 21})])
    bound = model.bind(response_format={"type": "json_object"})
    chain = bound | (
        JsonOutputParser() if parser == "json" else PydanticOutputParser(pydantic_object=Weather)
    )
    result = chain.invoke("Weather in Paris, as JSON?", config=cfg(captured))
    assert result in ({"city": "Paris", "temp_c": 21}, Weather(city="Paris", temp_c=21))

    assert_answered(telemetry)
    root = telemetry.span(AGENT_SPAN)
    (answer,) = messages(root)
    assert json.loads(answer["parts"][0]["content"]) == {"city": "Paris", "temp_c": 21}
    chat = telemetry.span("chat scripted-chat")
    assert texts(chat) == [("user", "Weather in Paris, as JSON?")]


class WeatherState(MessagesState):
    weather: Weather | None


def extraction_graph(model: ScriptedChatModel) -> Any:
    """A node writing a structured answer to its own state key; messages stay the user's."""

    def extract(state: WeatherState) -> dict[str, Any]:
        return {"weather": model.with_structured_output(Weather).invoke(state["messages"])}

    graph = StateGraph(WeatherState)
    graph.add_node("extract", extract)
    graph.add_edge(START, "extract")
    graph.add_edge("extract", END)
    return graph.compile()


@pytest.mark.parametrize("mode", MODES)
def test_structured_answer_in_a_state_key_is_the_runs_output(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler, mode: str
) -> None:
    """Regression: the run's output was the user's own question, as the assistant's."""
    result = run_with(
        mode,
        extraction_graph(ScriptedChatModel([weather_call()])),
        {"messages": [("user", "Weather in Paris?")]},
        config=cfg(captured),
    )
    assert result["weather"] == Weather(city="Paris", temp_c=21)

    tree = Tree(telemetry.spans())
    root = tree.one(AGENT_SPAN)
    assert [s.name for s in tree.children(root)] == ["chat scripted-chat"]
    assert attrs(tree.one("chat scripted-chat"))[semconv.NODE_NAME] == "extract"
    assert_answered(telemetry)
    (answer,) = messages(root)
    assert answer["role"] == "assistant"
    content = json.loads(answer["parts"][0]["content"])
    assert content == {"weather": {"city": "Paris", "temp_c": 21}}


@pytest.mark.parametrize("mode", MODES)
def test_react_agent_response_format_answers_without_final_text(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler, mode: str
) -> None:
    """The last AI message is blank but ``structured_response`` holds the answer: no bail."""
    model = ScriptedChatModel([tool_turn(), "", weather_call()])
    agent = react_agent(model, [add], response_format=Weather)
    result = run_with(
        mode, agent, {"messages": [("user", "1+2, then Paris weather")]}, config=cfg(captured)
    )
    assert result["structured_response"] == Weather(city="Paris", temp_c=21)

    tree = Tree(telemetry.spans())
    root = tree.one(AGENT_SPAN)
    chats = tree.named("chat scripted-chat")
    assert [attrs(c)[semconv.NODE_NAME] for c in chats] == [
        "agent",
        "agent",
        "generate_structured_response",
    ]
    assert all(tree.parent(s) is root for s in tree.spans if s is not root)
    assert_answered(telemetry)
    (answer,) = messages(root)
    assert json.loads(answer["parts"][0]["content"]) == {"city": "Paris", "temp_c": 21}


def test_react_agent_response_format_without_capture(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel([tool_turn(), "", weather_call()])
    agent = react_agent(model, [add], response_format=Weather)
    agent.invoke({"messages": [("user", "1+2, then Paris weather")]}, config=cfg(lc))
    assert_answered(telemetry)
    assert_no_content(telemetry.spans())
    assert_clean(telemetry, lc)
