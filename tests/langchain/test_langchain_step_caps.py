"""A framework's own step cap is a silent bail: the run ends normally on a budget message.

Real agents over a scripted model that keeps calling tools: LangGraph's prebuilt
``create_react_agent`` (its ``remaining_steps`` guard at an even ``recursion_limit``; an odd one
raises ``GraphRecursionError``) and LangChain's ``create_agent`` with ``ModelCallLimitMiddleware``
and ``ToolCallLimitMiddleware`` (exit "end"; exit "error" raises). Each capped run counts as a
silent bail of its tenant (``tool_calls_with_no_text``, stop reason ``recursion_limit``, empty
answer); the same agent answering on the last call its budget allows stays a clean answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import uuid4

import pytest
from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain.agents.middleware.tool_call_limit import ToolCallLimitExceededError
from langchain_core.messages import AIMessage
from langgraph.errors import GraphRecursionError

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.langchain import step_caps
from symfonic_otel.langchain.messages import AIShape
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_shapes_support import assert_clean
from tests.support.langchain_support import (
    AGENT_SPAN,
    add,
    call,
    internal_errors,
)
from tests.support.step_cap_support import (
    BAILS,
    CAPS,
    MODES,
    QUESTION,
    RUNS,
    Cap,
    assert_answered,
    assert_capped,
    cfg,
    model_call_limit,
    prebuilt,
    run,
    script,
    tool_call_limit,
)

pytestmark = pytest.mark.usefixtures("no_detach_errors")

BY_NAME = {cap.name: cap for cap in CAPS}


def _run_and_check(
    telemetry: InMemoryTelemetry, mode: str, cap: Cap, capped: bool, *handlers: Any
) -> None:
    """Runs ``cap``'s capped (or answered) graph for tenant ``acme``, then checks the verdict."""
    run(mode, cap.capped() if capped else cap.answered(), cfg(cap, "acme", *handlers))
    if capped:
        assert_capped(telemetry, "acme")
    else:
        assert_answered(telemetry, "acme")


@pytest.fixture
def handler(telemetry: InMemoryTelemetry) -> Any:
    lc = LangChainCallbackHandler(handler=telemetry.handler())
    yield lc
    assert_clean(telemetry, lc)


@pytest.mark.parametrize("capped", [True, False], ids=["capped", "answered_on_the_last_call"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("cap", CAPS, ids=lambda cap: cap.name)
def test_a_capped_run_is_a_silent_bail_and_an_answer_on_the_last_allowed_call_is_clean(
    telemetry: InMemoryTelemetry,
    handler: LangChainCallbackHandler,
    cap: Cap,
    mode: str,
    capped: bool,
) -> None:
    _run_and_check(telemetry, mode, cap, capped, handler)


@pytest.mark.parametrize("cap", CAPS, ids=lambda cap: cap.name)
def test_capped_and_answered_tenants_apart_on_one_handler(
    telemetry: InMemoryTelemetry, handler: LangChainCallbackHandler, cap: Cap
) -> None:
    run("invoke", cap.capped(), cfg(cap, "capped-co", handler))
    run("invoke", cap.answered(), cfg(cap, "fine-co", handler))
    bails = telemetry.points(BAILS)
    assert [(a[semconv.TENANT_ID], v) for a, v in bails] == [("capped-co", 1)]
    empty = {semconv.TENANT_ID: "fine-co", semconv.RESPONSE_EMPTY: True}
    assert telemetry.value(RUNS, empty) == 0
    answered = {semconv.TENANT_ID: "fine-co", semconv.RESPONSE_EMPTY: False}
    assert telemetry.value(RUNS, answered) == 1


@pytest.mark.parametrize(("capped", "mode"), [(True, "invoke"), (False, "ainvoke")])
@pytest.mark.parametrize("cap", CAPS, ids=lambda cap: cap.name)
def test_instrumentor_path_counts_the_cap_and_keeps_answers_clean(
    telemetry: InMemoryTelemetry, instrumentor: Any, cap: Cap, capped: bool, mode: str
) -> None:
    _run_and_check(telemetry, mode, cap, capped)
    assert internal_errors(telemetry) == 0


def test_capped_stream_ends_on_the_framework_s_text_message(
    telemetry: InMemoryTelemetry, handler: LangChainCallbackHandler
) -> None:
    """The last update a capped prebuilt agent streams is the guard's text message (what the
    user saw): it has text and no tool calls, and still the run is a bail, not an answer."""
    cap = BY_NAME["prebuilt_remaining_steps"]
    updates = list(cap.capped().stream(QUESTION, config=cfg(cap, "acme", handler)))
    last = updates[-1]["agent"]["messages"][-1]
    assert isinstance(last, AIMessage) and not last.tool_calls and last.text
    assert_capped(telemetry, "acme")


# --- budgets that raise: an error outcome, still a bail -------------------------------------


def _raising(
    build: Callable[[list[Any]], Any], error: type[BaseException], recursion_limit: int
) -> tuple[Any, type[BaseException], int]:
    return build(script(12, answer=False)), error, recursion_limit


RAISING: dict[str, Callable[[], tuple[Any, type[BaseException], int]]] = {
    "prebuilt_odd_recursion_limit": lambda: _raising(prebuilt, GraphRecursionError, 9),
    "create_agent_recursion_limit": lambda: _raising(
        lambda entries: model_call_limit(entries), GraphRecursionError, 7
    ),
    "model_call_limit_error": lambda: _raising(
        lambda entries: model_call_limit(entries, "error"), ModelCallLimitExceededError, 50
    ),
    "tool_call_limit_error": lambda: _raising(
        lambda entries: tool_call_limit(entries, "error"), ToolCallLimitExceededError, 50
    ),
}


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "stream_updates"])
@pytest.mark.parametrize("name", RAISING)
def test_budget_that_raises_is_an_error_and_a_bail(
    telemetry: InMemoryTelemetry, handler: LangChainCallbackHandler, name: str, mode: str
) -> None:
    agent, error, recursion_limit = RAISING[name]()
    config = cfg(BY_NAME["prebuilt_remaining_steps"], "acme", handler)
    config["recursion_limit"] = recursion_limit
    with pytest.raises(error):
        run(mode, agent, config)
    assert_capped(telemetry, "acme", outcome="error")


# --- what is not a step cap ------------------------------------------------------------------


def test_a_model_that_answers_at_once_is_no_cap(
    telemetry: InMemoryTelemetry, handler: LangChainCallbackHandler
) -> None:
    cap = BY_NAME["prebuilt_remaining_steps"]
    run("invoke", prebuilt(script(0)), cfg(cap, "acme", handler))
    assert_answered(telemetry, "acme")


def test_a_node_that_writes_a_text_message_after_tools_is_no_cap(
    telemetry: InMemoryTelemetry, handler: LangChainCallbackHandler
) -> None:
    """A graph whose own node answers after the model's tool call (a different message, no
    jump to the end) is an answer: only a replaced model output or a jump is a cap."""
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    model = ScriptedChatModel(script(1, answer=False))

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def summary(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("The tool says 3.")]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([add]))
    graph.add_node("summary", summary)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "tools")
    graph.add_edge("tools", "summary")
    graph.add_edge("summary", END)
    graph.compile().invoke(QUESTION, config=cfg(BY_NAME["prebuilt_remaining_steps"], "a", handler))
    assert_answered(telemetry, "a")


def test_a_jump_to_the_end_without_a_closing_ai_message_is_no_cap(
    telemetry: InMemoryTelemetry, handler: LangChainCallbackHandler
) -> None:
    """A hook that jumps to the end after the model answered leaves the model's answer as the
    final message: an answer."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import after_model

    @after_model(can_jump_to=["end"])
    def stop_after_answer(state: Any, runtime: Any) -> dict[str, Any]:
        return {"jump_to": "end"}

    agent = create_agent(ScriptedChatModel(script(0)), [add], middleware=[stop_after_answer])
    agent.invoke(QUESTION, config=cfg(BY_NAME["create_agent_tool_call_limit"], "a", handler))
    assert_answered(telemetry, "a")


# --- a capped agent inside a graph ----------------------------------------------------------


def _supervisor(worker: Any, answer: ScriptedChatModel | None = None) -> Any:
    """A graph running ``worker`` as its node, then (``answer``) a model call of its own."""
    from langgraph.graph import END, START, MessagesState, StateGraph

    graph = StateGraph(MessagesState)
    graph.add_node("worker", worker)
    graph.add_edge(START, "worker")
    if answer is None:
        graph.add_edge("worker", END)
    else:

        def summarise(state: MessagesState) -> dict[str, Any]:
            return {"messages": [answer.invoke(state["messages"])]}

        graph.add_node("summarise", summarise)
        graph.add_edge("worker", "summarise")
        graph.add_edge("summarise", END)
    return graph.compile()


def _runs(telemetry: InMemoryTelemetry) -> list[tuple[Any, Any]]:
    return sorted(
        (s.attributes.get(semconv.RUN_STOP_REASON), s.attributes.get(semconv.RESPONSE_EMPTY))
        for s in telemetry.spans()
        if s.name.startswith("invoke_agent") and s.attributes is not None
    )


def test_graph_relaying_a_capped_sub_agent_s_message_is_capped_too(
    telemetry: InMemoryTelemetry, handler: LangChainCallbackHandler
) -> None:
    """As a parent run ending on a sub-agent's blank answer is a bail, so is one ending on a
    sub-agent's budget message: both runs, for the same tenant."""
    cap = BY_NAME["prebuilt_remaining_steps"]
    _supervisor(cap.capped()).invoke(QUESTION, config=cfg(cap, "acme", handler))
    assert _runs(telemetry) == [("recursion_limit", True), ("recursion_limit", True)]
    assert telemetry.value(BAILS, {semconv.TENANT_ID: "acme"}) == telemetry.value(BAILS) == 2


def test_graph_answering_after_a_capped_sub_agent_is_an_answer(
    telemetry: InMemoryTelemetry, handler: LangChainCallbackHandler
) -> None:
    cap = BY_NAME["prebuilt_remaining_steps"]
    graph = _supervisor(cap.capped(), ScriptedChatModel(["Here is what I found: 3."]))
    graph.invoke(QUESTION, config=cfg(cap, "acme", handler))
    assert _runs(telemetry) == [("end_turn", False), ("recursion_limit", True)]
    assert telemetry.value(BAILS) == 1


# --- the structural rules on their own ------------------------------------------------------


@pytest.mark.parametrize(
    ("outputs", "expected"),
    [
        ({"jump_to": "end", "messages": [AIMessage("limit", id="m1")]}, "m1"),
        ({"jump_to": "end", "messages": [AIMessage("limit")]}, step_caps.UNKNOWN_ID),
        ({"jump_to": "end", "messages": [{"role": "assistant", "content": "x", "id": "d"}]}, "d"),
        ({"jump_to": "model", "messages": [AIMessage("limit", id="m1")]}, None),
        ({"jump_to": "end"}, None),
        ({"jump_to": "end", "messages": []}, None),
        ({"jump_to": "end", "messages": [AIMessage("", tool_calls=[call("add", {}, "c")])]}, None),
        ({"jump_to": "end", "messages": [("user", "hi")]}, None),
        ({"jump_to": "end", "messages": "not a list"}, None),
        ({"messages": [AIMessage("answer", id="m1")]}, None),
        ([{"jump_to": "end"}], None),
        (None, None),
    ],
)
def test_closing_message_of_a_node_output(outputs: object, expected: str | None) -> None:
    assert step_caps.closing_message(outputs) == expected


def _shape(tool_calls: int, message_id: str | None) -> AIShape:
    stop = "tool_use" if tool_calls else "end_turn"
    return AIShape(not tool_calls, "str", tool_calls, stop, message_id)


@pytest.mark.parametrize(
    ("model_output", "closing", "final", "expected"),
    [
        (_shape(1, "m"), None, _shape(0, "m"), True),  # the guard replaced the model's output
        (_shape(0, "m"), None, _shape(0, "m"), False),  # the model's own answer
        (_shape(1, "m"), None, _shape(0, "other"), False),  # a message of its own, no jump
        (_shape(1, None), None, _shape(0, None), False),  # no ids: nothing to tell by
        (_shape(1, "m"), None, _shape(1, "m"), False),  # still calling tools: not an ending
        (_shape(1, "m"), "j", _shape(0, "j"), True),  # a hook's closing message
        (_shape(1, "m"), "j", _shape(0, "m2"), False),  # something after the jump's message
        (None, step_caps.UNKNOWN_ID, _shape(0, None), True),  # an id-less closing message
        (None, "j", None, False),  # the run ended on no AI message
    ],
)
def test_capped_verdict(
    model_output: AIShape | None, closing: str | None, final: AIShape | None, expected: bool
) -> None:
    assert step_caps.capped(model_output, closing, final) is expected


class _Hostile(dict[str, Any]):
    def get(self, key: str, default: Any = None) -> Any:
        raise RuntimeError("unreadable state")


def test_unreadable_node_output_is_logged_and_the_run_still_recorded(
    telemetry: InMemoryTelemetry,
) -> None:
    """A node output that raises when read never reaches the agent: the failure is counted
    and the run ends with what is known (its answer)."""
    lc = LangChainCallbackHandler(handler=telemetry.handler())
    top, node = uuid4(), uuid4()
    lc.on_chain_start({}, QUESTION, run_id=top, metadata={"tenant_id": "acme"})
    lc.on_chain_start({}, {}, run_id=node, parent_run_id=top)
    lc.on_chain_end(_Hostile(jump_to="end"), run_id=node, parent_run_id=top)
    lc.on_chain_end({"messages": [AIMessage("3", id="m1")]}, run_id=top)
    assert lc.internal_failures == {"langchain.read_node_output": 1}
    attributes = dict(telemetry.span(AGENT_SPAN).attributes or {})
    assert attributes[semconv.RESPONSE_EMPTY] is False
    assert telemetry.value(BAILS) == 0
    assert lc.tracked_runs == lc.tracked_calls == 0
