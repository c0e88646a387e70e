"""Tool shapes on the real LangGraph: a retriever tool, hand-offs between agents, tools that
return a ``Command``, parallel tool calls of one turn, model fallbacks.

Each checks the span tree and parenting, the tool's captured arguments and result, the run's
verdict, and that the adapter kept no state and swallowed nothing.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, create_retriever_tool, tool
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command
from opentelemetry.trace import StatusCode

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_shapes_support import (
    BAILS,
    RUNS,
    Tree,
    attrs,
    cfg,
)
from tests.support.langchain_support import (
    AGENT_SPAN,
    add,
    call,
    model_only_graph,
    react_agent,
)


def test_retriever_tool_nests_its_retrieval_under_the_tool(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    docs = [Document("Paris is in France", id="d1"), Document("Rome is in Italy", id="d2")]
    store = InMemoryVectorStore.from_documents(docs, DeterministicFakeEmbedding(size=8))
    search = create_retriever_tool(
        store.as_retriever(search_kwargs={"k": 1}), "search_docs", "Search the docs."
    )
    model = ScriptedChatModel(
        [AIMessage("", tool_calls=[call("search_docs", {"query": "Paris"})]), "In France."]
    )
    react_agent(model, [search]).invoke(
        {"messages": [("user", "Where is Paris?")]},
        config=cfg(captured, configurable={"thread_id": "rag-1"}),
    )
    tree = Tree(telemetry.spans())
    root = tree.one(AGENT_SPAN)
    tool_span = tree.one("execute_tool search_docs")
    (retrieval,) = tree.children(tool_span)
    assert tree.parent(tool_span) is root and retrieval.name == "retrieval InMemoryVectorStore"
    a = attrs(retrieval)
    assert a[semconv.RETRIEVAL_DOCUMENT_COUNT] == 1
    assert a[semconv.GEN_AI_CONVERSATION_ID] == "rag-1"
    assert a[semconv.GEN_AI_RETRIEVAL_QUERY_TEXT] == "Paris"
    assert a[semconv.RUN_ID] == attrs(root)[semconv.RUN_ID]
    result = json.loads(str(attrs(tool_span)[semconv.GEN_AI_TOOL_CALL_RESULT]))
    assert result == "Paris is in France"


# --- hand-offs, Command tools, parallel tool calls, fallbacks --------------------------------


@tool
def transfer_to_billing(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Hand the conversation to the billing agent."""
    reply = ToolMessage("handing off to billing", tool_call_id=tool_call_id)
    return Command(goto="billing", graph=Command.PARENT, update={"messages": [reply]})


def test_hand_off_to_another_agent_is_not_a_bail(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    """The support agent ends on a tool call (its hand-off): no verdict, not a silent bail;
    the tool result is the hand-off message, not the ``Command``'s repr."""
    support_model = ScriptedChatModel(
        [AIMessage("", tool_calls=[call("transfer_to_billing", {}, "h1")])]
    )
    support = react_agent(support_model, [transfer_to_billing], name="support")
    billing_model = ScriptedChatModel(["Your refund is on its way."])

    def billing(state: MessagesState) -> dict[str, Any]:
        return {"messages": [billing_model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("support", support, destinations=("billing",))
    graph.add_node("billing", billing)
    graph.add_edge(START, "support")
    graph.add_edge("billing", END)
    out = graph.compile(name="desk").invoke(
        {"messages": [("user", "refund please")]}, config=cfg(captured)
    )
    assert out["messages"][-1].content == "Your refund is on its way."

    tree = Tree(telemetry.spans())
    desk, sub = tree.one("invoke_agent desk"), tree.one("invoke_agent support")
    assert tree.parent(sub) is desk
    hand_off = tree.one("execute_tool transfer_to_billing")
    assert tree.parent(hand_off) is sub and hand_off.status.status_code is not StatusCode.ERROR
    result = attrs(hand_off)[semconv.GEN_AI_TOOL_CALL_RESULT]
    assert json.loads(str(result)) == "handing off to billing"
    assert attrs(sub)[semconv.RUN_OUTCOME] == "completed"
    assert semconv.RESPONSE_EMPTY not in attrs(sub)  # handed off: neither answered nor blank
    assert attrs(desk)[semconv.RESPONSE_EMPTY] is False
    billing_chat = tree.named("chat scripted-chat")[-1]
    assert tree.parent(billing_chat) is desk
    assert attrs(billing_chat)[semconv.NODE_NAME] == "billing"
    assert telemetry.value(BAILS) == 0


def test_command_tool_result_is_its_tool_message(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    """Regression: a tool returning ``Command(update=...)`` had the Command's repr as result."""

    @tool
    def remember(fact: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Remember a fact in the agent's state."""
        reply = ToolMessage(f"noted: {fact}", tool_call_id=tool_call_id)
        return Command(update={"messages": [reply]})

    model = ScriptedChatModel(
        [AIMessage("", tool_calls=[call("remember", {"fact": "sky is blue"}, "r1")]), "Noted."]
    )
    react_agent(model, [remember]).invoke(
        {"messages": [("user", "remember")]}, config=cfg(captured)
    )
    span = telemetry.span("execute_tool remember")
    assert json.loads(str(attrs(span)[semconv.GEN_AI_TOOL_CALL_RESULT])) == "noted: sky is blue"
    assert json.loads(str(attrs(span)[semconv.GEN_AI_TOOL_CALL_ARGUMENTS])) == {
        "fact": "sky is blue"
    }


def test_parallel_tool_calls_of_one_turn_are_sibling_spans(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    both = AIMessage(
        "", tool_calls=[call("add", {"a": 1, "b": 2}, "p1"), call("add", {"a": 3, "b": 4}, "p2")]
    )
    agent = react_agent(ScriptedChatModel([both, "3 and 7"]), [add])
    asyncio.run(agent.ainvoke({"messages": [("user", "1+2 and 3+4")]}, config=cfg(captured)))

    tree = Tree(telemetry.spans())
    root = tree.one(AGENT_SPAN)
    tools = tree.named("execute_tool add")
    assert len(tools) == 2 and all(tree.parent(s) is root for s in tools)
    results = {
        attrs(s)[semconv.GEN_AI_TOOL_CALL_ID]: json.loads(
            str(attrs(s)[semconv.GEN_AI_TOOL_CALL_RESULT])
        )
        for s in tools
    }
    assert results == {"p1": "3", "p2": "7"}
    final = tree.named("chat scripted-chat")[-1]
    seen = json.loads(str(attrs(final)[semconv.GEN_AI_INPUT_MESSAGES]))
    assert [m["role"] for m in seen] == ["user", "assistant", "tool", "tool"]


def test_model_fallback_records_the_failed_and_the_answering_call(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    primary = ScriptedChatModel([RuntimeError("provider down")], model_name="primary")
    backup = ScriptedChatModel(["fine"], model_name="backup")
    model_only_graph(primary.with_fallbacks([backup])).invoke(
        {"messages": [("user", "q")]}, config=cfg(captured)
    )
    tree = Tree(telemetry.spans())
    root = tree.one(AGENT_SPAN)
    failed, answered = tree.one("chat primary"), tree.one("chat backup")
    assert tree.parent(failed) is root and tree.parent(answered) is root
    assert failed.status.status_code is StatusCode.ERROR
    assert attrs(failed)[semconv.ERROR_TYPE] == "RuntimeError"
    assert answered.status.status_code is not StatusCode.ERROR
    assert attrs(root)[semconv.RUN_OUTCOME] == "completed"
    assert attrs(root)[semconv.RESPONSE_EMPTY] is False
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 1
