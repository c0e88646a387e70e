"""An application with no telemetry code at all, for ``opentelemetry-instrument python ...``.

Run by ``test_langchain_instrumentor_cli.py``: one LangGraph ``create_react_agent`` turn over a
scripted model that calls two tools at once, a retriever tool (an in-memory vector store over
LangChain's deterministic fake embeddings) and a tool that invokes a sub-graph. The last stdout
line is JSON: the answer, whether a span is still current after the turn, and the time the
script's own work ended (the test measures how long the interpreter takes to exit after it).

``python instrumentor_app.py abandon`` runs the turn on a daemon thread instead, over a model
that never answers, and exits while it waits: the run is open when the interpreter stops. (The
model, not a tool: LangGraph runs tools on a pool thread the interpreter joins at exit, so a tool
that never returns keeps any process alive, instrumented or not.)
"""

from __future__ import annotations

import json
import sys
import threading
import time
import warnings
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage
from langchain_core.tools import create_retriever_tool, tool
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.graph import END, START, MessagesState, StateGraph
from opentelemetry import trace

from symfonic_otel.testing import ScriptedChatModel

QUESTION = "PRIVATE-QUESTION-7f3a can I return socks?"
ANSWER = "Within 30 days, with a receipt."
USAGE = {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18}

store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
store.add_texts(["Returns are accepted within 30 days."])
search_policy = create_retriever_tool(store.as_retriever(), "search_policy", "Search the policy.")

expert_model = ScriptedChatModel(["Yes, with a receipt."])


def expert_node(state: MessagesState) -> dict[str, Any]:
    return {"messages": [expert_model.invoke(state["messages"])]}


expert_graph = StateGraph(MessagesState)
expert_graph.add_node("expert", expert_node)
expert_graph.add_edge(START, "expert")
expert_graph.add_edge("expert", END)
expert = expert_graph.compile(name="expert")


@tool
def ask_expert(question: str) -> str:
    """Ask the returns expert."""
    return str(expert.invoke({"messages": [("user", question)]})["messages"][-1].content)


ABANDON = sys.argv[1:] == ["abandon"]
model_called = threading.Event()


class StuckModel(ScriptedChatModel):
    """Never answers: the process exits with the run open."""

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        model_called.set()
        threading.Event().wait()


def main() -> None:
    with warnings.catch_warnings():  # its deprecation notice points at a package we lack
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        calls = [
            {
                "name": "search_policy",
                "args": {"query": "returns"},
                "id": "c1",
                "type": "tool_call",
            },
            {
                "name": "ask_expert",
                "args": {"question": "receipt?"},
                "id": "c2",
                "type": "tool_call",
            },
        ]
        script: list[Any] = [AIMessage("", tool_calls=calls, usage_metadata=USAGE), ANSWER]
        model = (StuckModel if ABANDON else ScriptedChatModel)(script)
        agent = create_react_agent(model, [search_policy, ask_expert])
    turn = {"messages": [("user", QUESTION)]}
    config: Any = {"metadata": {"tenant_id": "acme"}}
    if ABANDON:
        threading.Thread(target=agent.invoke, args=(turn, config), daemon=True).start()
        assert model_called.wait(30)
        print(json.dumps({"answer": None, "current": False, "end": time.time()}))
        return
    out = agent.invoke(turn, config=config)
    current = trace.get_current_span().get_span_context().is_valid
    print(
        json.dumps({"answer": out["messages"][-1].content, "current": current, "end": time.time()})
    )


if __name__ == "__main__":
    main()
