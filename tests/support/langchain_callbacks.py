"""Callback sequences LangGraph sends, driven by hand into a ``LangChainCallbackHandler``."""

from __future__ import annotations

from uuid import UUID, uuid4

from symfonic_otel import LangChainCallbackHandler

GRAPH = {"ls_integration": "langgraph"}


def start_sub_agent(lc: LangChainCallbackHandler, parent: UUID, name: str) -> tuple[UUID, UUID]:
    """A graph run inside ``parent`` whose first node has started (so a sub-agent run)."""
    sub = uuid4()
    lc.on_chain_start(
        {}, {"messages": []}, run_id=sub, parent_run_id=parent, metadata=GRAPH, name=name
    )
    return sub, start_first_node(lc, sub)


def start_first_node(lc: LangChainCallbackHandler, graph: UUID) -> UUID:
    """The first step of ``graph``: a node named ``inner``."""
    node = uuid4()
    lc.on_chain_start(
        {},
        {"messages": []},
        run_id=node,
        parent_run_id=graph,
        metadata={"langgraph_node": "inner"},
        tags=["graph:step:1"],
        name="inner",
    )
    return node
