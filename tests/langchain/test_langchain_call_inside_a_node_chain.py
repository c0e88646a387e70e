"""A model call made by a chain inside a graph node (a runnable that gets no span of its own)
goes under that node's span, not under the agent's: the chain is placed in the span that
encloses it."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableLambda
from langgraph.graph import MessagesState

from symfonic_otel import LangChainCallbackHandler
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_shapes_support import Tree, cfg
from tests.support.chain_graph_support import chain_graph


def test_a_call_made_by_a_chain_inside_a_node_is_under_that_node(
    telemetry: InMemoryTelemetry, noded: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel(["done"])
    inner = RunnableLambda(lambda messages: model.invoke(messages), name="ask")

    def answer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [inner.invoke(state["messages"])]}

    graph = chain_graph(("answer", answer), name="helper")
    graph.invoke({"messages": [("user", "hi")]}, config=cfg(noded))

    tree = Tree(telemetry.spans())
    node = tree.one("invoke_node answer")
    chat = tree.one("chat scripted-chat")
    assert tree.parent(node) is tree.one("invoke_agent helper")
    assert tree.parent(chat) is node
