"""Where the handler sits, on the real LangGraph: the model, a tool or a sub-graph only, or
both graph and model.

A handler that sees only part of a graph records what it sees: model and tool calls as spans
of their own under the caller's span, a sub-graph as a run of its own; one handler on graph and
model records each call once.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_shapes_support import (
    MODES,
    RUNS,
    Tree,
    assert_clean,
    attrs,
    cfg,
    one_node_graph,
    research_then_answer,
    research_tool,
    run_with,
    texts,
)
from tests.support.chain_graph_support import chain_graph, model_node
from tests.support.langchain_support import (
    AGENT_SPAN,
    add,
    call,
    model_only_graph,
    react_agent,
    tool_turn,
)


def _in_request(
    telemetry: InMemoryTelemetry, mode: str, app: Any, question: str, tenant: str
) -> tuple[Tree, ReadableSpan]:
    """Runs ``app`` on ``question`` for ``tenant`` inside an application span ``request``: the
    span tree, and that span."""
    with telemetry.tracer_provider.get_tracer("app").start_as_current_span("request"):
        metadata = {"metadata": {"tenant_id": tenant}}
        run_with(mode, app, {"messages": [("user", question)]}, config=metadata)
    tree = Tree(telemetry.spans())
    return tree, tree.one("request")


# --- the handler elsewhere than on the graph ----------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_handler_on_the_model_constructor_records_standalone_chats(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler, mode: str
) -> None:
    model = ScriptedChatModel([tool_turn(), "done"], callbacks=[captured])
    agent = react_agent(model, [add])
    tree, request = _in_request(telemetry, mode, agent, "1+2", "acme")
    chats = tree.named("chat scripted-chat")
    assert len(chats) == 2 and tree.children(request) == chats
    assert {attrs(c)[semconv.TENANT_ID] for c in chats} == {"acme"}
    assert all(semconv.RUN_ID not in attrs(c) for c in chats)
    assert texts(chats[1], semconv.GEN_AI_OUTPUT_MESSAGES) == [("assistant", "done")]
    assert not tree.named(AGENT_SPAN) and not tree.starting("execute_tool")
    assert telemetry.value(RUNS) == 0


def test_handler_via_with_config_on_a_pre_bound_model(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    """``with_config`` after ``bind_tools``: langchain-core drops a binding's config when
    ``create_react_agent`` binds the tools itself, so bind first."""
    model = ScriptedChatModel([tool_turn(), "done"])
    agent = react_agent(model.bind_tools([add]).with_config(callbacks=[captured]), [add])
    agent.invoke({"messages": [("user", "1+2")]})
    chats = Tree(telemetry.spans()).named("chat scripted-chat")
    assert len(chats) == 2 and len(telemetry.spans()) == 2
    definitions = json.loads(str(attrs(chats[0])[semconv.GEN_AI_TOOL_DEFINITIONS]))
    assert [d["function"]["name"] if "function" in d else d["name"] for d in definitions] == ["add"]


@pytest.mark.parametrize("mode", MODES)
def test_handler_on_a_tool_only_records_its_spans_under_the_callers(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler, mode: str
) -> None:
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    tool_ = StructuredTool.from_function(divide, callbacks=[captured])
    model = ScriptedChatModel(
        [
            AIMessage("", tool_calls=[call("divide", {"a": 6, "b": 3}, "d1")]),
            AIMessage("", tool_calls=[call("divide", {"a": 1, "b": 0}, "d2")]),
            "2, and 1/0 is undefined",
        ]
    )
    agent = react_agent(model, ToolNode([tool_], handle_tool_errors=True))
    tree, request = _in_request(telemetry, mode, agent, "6/3, 1/0", "t1")
    ok, failed = tree.named("execute_tool divide")
    assert tree.children(request) == [ok, failed]
    assert [attrs(s)[semconv.GEN_AI_TOOL_CALL_ID] for s in (ok, failed)] == ["d1", "d2"]
    assert {attrs(s)[semconv.TENANT_ID] for s in (ok, failed)} == {"t1"}
    assert json.loads(str(attrs(ok)[semconv.GEN_AI_TOOL_CALL_ARGUMENTS])) == {"a": 6, "b": 3}
    assert json.loads(str(attrs(ok)[semconv.GEN_AI_TOOL_CALL_RESULT])) == "2.0"
    assert ok.status.status_code is not StatusCode.ERROR
    assert failed.status.status_code is StatusCode.ERROR
    assert attrs(failed)[semconv.ERROR_TYPE] == "ZeroDivisionError"
    assert not tree.starting("chat") and telemetry.value(RUNS) == 0


@pytest.mark.parametrize("mode", MODES)
def test_same_handler_on_graph_and_model_records_each_call_once(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler, mode: str
) -> None:
    model = ScriptedChatModel([tool_turn(), "done"], callbacks=[captured])
    run_with(mode, react_agent(model, [add]), {"messages": [("user", "1+2")]}, config=cfg(captured))
    tree = Tree(telemetry.spans())
    root = tree.one(AGENT_SPAN)
    assert sorted(s.name for s in tree.children(root)) == [
        "chat scripted-chat",
        "chat scripted-chat",
        "execute_tool add",
    ]
    assert len(tree.spans) == 4
    iterations = [attrs(c)[semconv.REACT_ITERATION_INDEX] for c in tree.named("chat scripted-chat")]
    assert iterations == [0, 1]
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 1


@pytest.mark.parametrize("attached", ["with_config", "invoke_config"])
@pytest.mark.parametrize("mode", MODES)
def test_handler_on_a_sub_graph_only_records_it_as_a_run(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler, attached: str, mode: str
) -> None:
    """Regression: the sub-graph's chains had a parent the handler never saw, so no run was
    recorded (its model call was a loose span, with no outcome and no bail verdict)."""
    model = ScriptedChatModel(["found it", "the answer"])
    sub = one_node_graph("inner", model, "researcher")
    if attached == "with_config":
        research: Any = sub.with_config(callbacks=[captured])
    else:

        def research(state: MessagesState) -> Any:
            return sub.invoke(state, config=cfg(captured))

    app = research_then_answer(research, model)
    tree, request = _in_request(telemetry, mode, app, "q", "acme")
    run = tree.one("invoke_agent researcher")
    assert tree.children(request) == [run]
    (chat,) = tree.named("chat scripted-chat")  # the parent's "answer" call is not ours
    assert tree.parent(chat) is run
    a = attrs(run)
    assert a[semconv.RUN_OUTCOME] == "completed" and a[semconv.RESPONSE_EMPTY] is False
    assert a[semconv.TENANT_ID] == "acme" and semconv.RUN_PARENT_ID not in a
    assert attrs(chat)[semconv.RUN_ID] == a[semconv.RUN_ID]
    assert texts(run, semconv.GEN_AI_OUTPUT_MESSAGES) == [("assistant", "found it")]
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 1


def test_graph_inside_a_standalone_tool_nests_under_the_tool(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    research = research_tool()

    def node(state: MessagesState) -> dict[str, Any]:
        research.invoke({"topic": "life"}, config=cfg(captured))  # the handler on this call only
        return {}

    graph = StateGraph(MessagesState)
    graph.add_node("work", node)
    graph.add_edge(START, "work")
    graph.add_edge("work", END)
    graph.compile().invoke({"messages": [("user", "q")]})

    tree = Tree(telemetry.spans())
    tool_span = tree.one("execute_tool research")
    run = tree.one(AGENT_SPAN)
    assert tree.roots() == [tool_span] and tree.children(tool_span) == [run]
    assert [s.name for s in tree.children(run)] == ["chat scripted-chat"]
    assert attrs(run)[semconv.RESPONSE_EMPTY] is False
    assert json.loads(str(attrs(tool_span)[semconv.GEN_AI_TOOL_CALL_RESULT])) == "inner says 42"


def test_late_steps_of_an_evicted_run_start_no_runs(telemetry: InMemoryTelemetry) -> None:
    """A run the core evicted (open-run cap) while a node was still working: the steps after
    that node have a parent the adapter dropped, and must not be taken for new runs."""
    handler = LangChainCallbackHandler(handler=telemetry.handler(max_open_runs=1))
    started, gate = threading.Event(), threading.Event()

    def wait(state: MessagesState) -> dict[str, Any]:
        started.set()
        assert gate.wait(5)
        return {}

    late = ScriptedChatModel(["late answer"])
    slow = chain_graph(("wait", wait), ("answer", model_node(late)), name="slow")
    worker = threading.Thread(
        target=slow.invoke, args=({"messages": [("user", "a")]},), kwargs={"config": cfg(handler)}
    )
    worker.start()
    assert started.wait(5)
    model_only_graph(ScriptedChatModel(["b"])).invoke(
        {"messages": [("user", "b")]}, config=cfg(handler, run_name="fast")
    )
    gate.set()
    worker.join(5)

    tree = Tree(telemetry.spans())
    runs = [s for s in tree.spans if s.name.startswith("invoke_agent")]
    assert sorted(s.name for s in runs) == ["invoke_agent fast", "invoke_agent slow"]
    assert attrs(tree.one("invoke_agent slow"))[semconv.RUN_OUTCOME] == "abandoned"
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "completed"}) == 1
    assert len(tree.named("chat scripted-chat")) == 2  # the late call is still recorded
    assert_clean(telemetry, handler)
