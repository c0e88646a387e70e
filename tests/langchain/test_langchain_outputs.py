"""What a LangChain run answered: only an AI message without text is an empty answer.

Real LangGraph graphs and LCEL chains with output parsers over the scripted model; each test
checks the verdict the adapter hands the core (``answered``) and the resulting
``symfonic.response.empty`` on the run span and the runs counter.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict, cast

import pytest
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser, StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pydantic import BaseModel

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.chain_graph_support import chain_graph
from tests.support.langchain_support import (
    AGENT_SPAN,
    RecordingHandler,
    call,
    model_only_graph,
    react_agent,
    recording_handler,
    scripted_agent,
    slow,
    tool_turn,
)

RUNS = semconv.AGENT_RUNS.name
BAILS = semconv.SILENT_BAILS.name


class Sum(BaseModel):
    total: int


class CalcState(TypedDict, total=False):
    question: str
    result: str


@pytest.fixture
def core(telemetry: InMemoryTelemetry) -> RecordingHandler:
    return recording_handler(telemetry, capture_content=True)


@pytest.fixture
def handler(core: RecordingHandler) -> LangChainCallbackHandler:
    return LangChainCallbackHandler(handler=core)


def cfg(handler: LangChainCallbackHandler) -> RunnableConfig:
    return cast(RunnableConfig, {"callbacks": [handler]})


def run_span(telemetry: InMemoryTelemetry) -> dict[str, Any]:
    return dict(telemetry.span(AGENT_SPAN).attributes or {})


def assert_answered(telemetry: InMemoryTelemetry, core: RecordingHandler) -> None:
    _, kwargs = core.agent_end_call()
    assert kwargs["answered"] is True
    assert run_span(telemetry)[semconv.RESPONSE_EMPTY] is False
    assert telemetry.value(RUNS, {semconv.RESPONSE_EMPTY: False}) == 1
    assert telemetry.value(BAILS) == 0


def calc_graph(node: Any) -> Any:
    return chain_graph(("calc", node), state=CalcState)


def test_graph_with_non_message_state_is_an_answer(
    telemetry: InMemoryTelemetry, core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    result = calc_graph(lambda state: {"result": "10"}).invoke(
        {"question": "5+5"}, config=cfg(handler)
    )
    assert result == {"question": "5+5", "result": "10"}
    assert_answered(telemetry, core)
    # Capture on: the structured answer is what the span shows.
    assert '\\"result\\": \\"10\\"' in str(run_span(telemetry)[semconv.GEN_AI_OUTPUT_MESSAGES])


def test_graph_state_with_only_blank_values_is_empty(
    telemetry: InMemoryTelemetry, core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    calc_graph(lambda state: {"result": "  "}).invoke({"question": ""}, config=cfg(handler))
    assert core.agent_end_call()[1]["answered"] is False
    assert run_span(telemetry)[semconv.RESPONSE_EMPTY] is True
    assert telemetry.value(BAILS) == 0  # blank, but not a model turn without text


def test_json_output_parser_result_is_an_answer(
    telemetry: InMemoryTelemetry, core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel(['{"total": 10}'])
    chain = ChatPromptTemplate.from_messages([("user", "{q}")]) | model | JsonOutputParser()
    assert chain.invoke({"q": "5+5 as JSON"}, config=cfg(handler)) == {"total": 10}
    assert_answered(telemetry, core)


def test_pydantic_output_parser_result_is_an_answer(
    telemetry: InMemoryTelemetry, core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel(['{"total": 10}'])
    parser = PydanticOutputParser(pydantic_object=Sum)
    chain = ChatPromptTemplate.from_messages([("user", "{q}")]) | model | parser
    assert chain.invoke({"q": "5+5"}, config=cfg(handler)) == Sum(total=10)
    assert_answered(telemetry, core)
    assert '{\\"total\\": 10}' in str(run_span(telemetry)[semconv.GEN_AI_OUTPUT_MESSAGES])


@pytest.mark.parametrize("value", [[1, 2], 0, 10.5, False])
def test_list_and_number_results_are_answers(
    telemetry: InMemoryTelemetry,
    core: RecordingHandler,
    handler: LangChainCallbackHandler,
    value: Any,
) -> None:
    RunnableLambda(lambda _: value).invoke("go", config=cfg(handler))
    assert_answered(telemetry, core)


def test_string_parser_over_an_empty_reply_is_empty(
    telemetry: InMemoryTelemetry, core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    chain = ChatPromptTemplate.from_messages([("user", "{q}")]) | ScriptedChatModel([""])
    (chain | StrOutputParser()).invoke({"q": "hi"}, config=cfg(handler))
    assert core.agent_end_call()[1]["answered"] is False
    assert run_span(telemetry)[semconv.RESPONSE_EMPTY] is True


def test_bare_ai_message_without_text_is_empty_but_not_a_bail(
    telemetry: InMemoryTelemetry, core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    chain = ChatPromptTemplate.from_messages([("user", "{q}")]) | ScriptedChatModel([tool_turn()])
    chain.invoke({"q": "1+2"}, config=cfg(handler))
    assert core.agent_end_call()[1]["answered"] is False
    assert run_span(telemetry)[semconv.RESPONSE_EMPTY] is True
    assert telemetry.value(BAILS) == 0


def test_message_state_ending_in_a_blank_ai_message_is_a_bail(
    telemetry: InMemoryTelemetry, core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    model_only_graph(ScriptedChatModel([AIMessage("")])).invoke(
        {"messages": [("user", "hi")]}, config=cfg(handler)
    )
    assert core.agent_end_call()[1]["answered"] is False
    assert run_span(telemetry)[semconv.RESPONSE_EMPTY] is True
    assert telemetry.value(BAILS, {semconv.REACT_TERMINATION_REASON: "no_content_no_tool_calls"})


def test_structured_response_of_a_react_agent_is_an_answer(
    telemetry: InMemoryTelemetry, core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    """``response_format``: the answer is in ``structured_response``, not in the messages."""
    structured = AIMessage("", tool_calls=[call("Sum", {"total": 3}, "s1")])
    agent = scripted_agent(tool_turn(), AIMessage(""), structured, response_format=Sum)
    result = agent.invoke({"messages": [("user", "1+2")]}, config=cfg(handler))
    assert result["structured_response"] == Sum(total=3)
    assert result["messages"][-1].content == ""  # the last AI message alone would be a bail
    assert_answered(telemetry, core)


def test_errored_run_carries_no_verdict(
    telemetry: InMemoryTelemetry, core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    with pytest.raises(RuntimeError):
        scripted_agent(tool_turn(), RuntimeError("provider down")).invoke(
            {"messages": [("user", "1+2")]}, config=cfg(handler)
        )
    event, kwargs = core.agent_end_call()
    assert kwargs["answered"] is None and event.final_response is None
    assert event.outcome == "error" and kwargs["error_type"] == "RuntimeError"
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "error"}) == 1
    assert telemetry.value(BAILS) == 0


async def test_cancelled_run_carries_no_verdict(
    telemetry: InMemoryTelemetry, core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel([AIMessage("", tool_calls=[call("slow", {"seconds": 30})])])
    task = asyncio.create_task(
        react_agent(model, [slow]).ainvoke({"messages": [("user", "wait")]}, config=cfg(handler))
    )
    while not any(name == "agent_start" for name, _, _ in core.calls):
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    event, kwargs = core.agent_end_call()
    assert kwargs["answered"] is None and event.final_response is None
    assert event.outcome == "cancelled" and kwargs["error_type"] is None
    assert run_span(telemetry)[semconv.RUN_OUTCOME] == "cancelled"
    assert telemetry.value(BAILS) == 0


def test_interrupted_graph_has_no_verdict(
    telemetry: InMemoryTelemetry, core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    """A run paused on ``interrupt()`` answered nothing yet, and is not a blank answer either."""

    def ask(state: CalcState) -> dict[str, Any]:
        return {"result": interrupt("which numbers?")}

    graph = StateGraph(CalcState)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    config = cast(RunnableConfig, {"callbacks": [handler], "configurable": {"thread_id": "t-1"}})
    paused = graph.compile(checkpointer=InMemorySaver()).invoke({"question": "?"}, config=config)
    assert "__interrupt__" in paused
    event, kwargs = core.agent_end_call()
    assert kwargs["answered"] is None and event.final_response is None
    assert event.outcome == "completed" and event.stop_reason == "interrupted"
    assert telemetry.value(BAILS) == 0


class _Exploding(dict[str, Any]):
    """A graph state whose every read raises (a broken custom mapping)."""

    def get(self, key: Any, default: Any = None) -> Any:
        raise RuntimeError("cannot read")

    def __getitem__(self, key: Any) -> Any:
        raise RuntimeError("cannot read")


def test_unreadable_output_still_ends_the_run(
    telemetry: InMemoryTelemetry, core: RecordingHandler, handler: LangChainCallbackHandler
) -> None:
    RunnableLambda(lambda _: _Exploding(messages=[])).invoke("go", config=cfg(handler))
    assert core.open_runs == 0
    event, kwargs = core.agent_end_call()
    assert event.outcome == "completed" and kwargs["answered"] is None
    assert run_span(telemetry)[semconv.RUN_OUTCOME] == "completed"
    assert handler.internal_failures == {"langchain.read_run_output": 1}
    assert telemetry.value(semconv.DROPPED_EVENTS.name) == 0
