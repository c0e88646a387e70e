"""Small LangGraph graphs for tests: steps run one after another, and a node that calls a model.
Most graph tests need nothing more than a chain, so they build it here rather than wire the
``StateGraph`` edges each time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, MessagesState, StateGraph


def model_node(model: BaseChatModel) -> Callable[[MessagesState], dict[str, Any]]:
    """A node that answers the messages so far with one call of ``model``."""

    def node(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    return node


def chain_graph(
    *steps: tuple[str, Any], state: Any = MessagesState, name: str | None = None
) -> Any:
    """The compiled graph running ``steps`` (node name, node) in order from start to end, named
    ``name`` when given (a named graph is an agent of that name)."""
    graph = StateGraph(state)
    previous = START
    for step, node in steps:
        graph.add_node(step, node)
        graph.add_edge(previous, step)
        previous = step
    graph.add_edge(previous, END)
    return graph.compile(name=name) if name else graph.compile()
