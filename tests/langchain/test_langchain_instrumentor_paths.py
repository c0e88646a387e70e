"""SymfonicLangChainInstrumentor as applications run it: next to a handler of their own, under
thread pools and ``asyncio.gather``, uninstrumented mid-process.

Rule for a user's own ``LangChainCallbackHandler`` under the instrumentor: it replaces ours in
every callback manager it joins (a sub-graph's ``callbacks``, its ``with_config``, a model's or a
tool's own ``callbacks``), so each run is recorded once, by the user's handler, and its spans
nest under ours through the current context.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackManager, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import StructuredTool
from langgraph.graph import END, START, MessagesState, StateGraph
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from wrapt import BoundFunctionWrapper, FunctionWrapper

from symfonic_otel import LangChainCallbackHandler, semconv, tenant_scope
from symfonic_otel.instrumentation import SymfonicLangChainInstrumentor
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import (
    AGENT_SPAN,
    add,
    assert_one_tree_per_run,
    by_trace,
    conversation_agent,
    internal_errors,
    langchain_instrumented,
    question,
    react_agent,
    scripted_agent,
    tool_turn,
)

RUNS = 6


pytestmark = pytest.mark.usefixtures("no_detach_errors")


@pytest.fixture
def mine() -> Iterator[InMemoryTelemetry]:
    """The telemetry of the user's own handler, apart from the instrumentor's."""
    memory = InMemoryTelemetry()
    yield memory
    assert memory.unended_spans == [] and memory.open_runs == 0
    memory.shutdown()


def named(spans: list[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


def parent_is(child: ReadableSpan, parent: ReadableSpan) -> bool:
    return (
        child.parent is not None
        and parent.context is not None
        and child.parent.span_id == parent.context.span_id
    )


# --- a handler of the user's next to the instrumentor: each run recorded once -------------------


def parent_calling(sub: Any, config: dict[str, Any] | None, use_async: bool) -> Any:
    """A graph whose one node invokes ``sub`` (with ``config``) and keeps its answer."""

    def call_sub(state: MessagesState) -> dict[str, Any]:
        out = sub.invoke({"messages": state["messages"]}, config=config)
        return {"messages": out["messages"][-1:]}

    async def acall_sub(state: MessagesState) -> dict[str, Any]:
        out = await sub.ainvoke({"messages": state["messages"]}, config=config)
        return {"messages": out["messages"][-1:]}

    graph = StateGraph(MessagesState)
    graph.add_node("call_sub", acall_sub if use_async else call_sub)
    graph.add_edge(START, "call_sub")
    graph.add_edge("call_sub", END)
    return graph.compile(name="parent")


def stock_tool(tracer: trace.Tracer) -> StructuredTool:
    def add(a: int, b: int) -> int:
        """Add, remotely."""
        with tracer.start_as_current_span("GET /add"):
            return a + b

    return StructuredTool.from_function(add)


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize("how", ["invoke-config", "with-config"])
async def test_sub_graph_with_its_own_handler_is_recorded_once(
    telemetry: InMemoryTelemetry,
    instrumentor: SymfonicLangChainInstrumentor,
    mine: InMemoryTelemetry,
    how: str,
    use_async: bool,
) -> None:
    """The sub-graph is the user's handler's agent run only; the parent run is ours."""
    handler = LangChainCallbackHandler(handler=mine.track(mine.handler()))
    client = stock_tool(mine.tracer_provider.get_tracer("http-client"))
    sub = react_agent(ScriptedChatModel([tool_turn(), "3"]), [client], name="sub")
    if how == "with-config":
        graph = parent_calling(sub.with_config(callbacks=[handler]), None, use_async)
    else:
        graph = parent_calling(sub, {"callbacks": [handler]}, use_async)
    question = {"messages": [("user", "1+2")]}
    out = await graph.ainvoke(question) if use_async else graph.invoke(question)
    assert out["messages"][-1].content == "3"

    (parent,) = telemetry.spans()  # ours recorded the parent run and nothing of the sub-graph
    assert parent.name == "invoke_agent parent"
    assert telemetry.value(semconv.AGENT_RUNS.name) == 1
    theirs = [s for s in mine.spans() if s.name != "GET /add"]
    (sub_run,) = named(theirs, "invoke_agent")
    assert sub_run.name == "invoke_agent sub"
    children = [s for s in theirs if s is not sub_run]
    assert sorted(s.name for s in children) == [
        "chat scripted-chat",
        "chat scripted-chat",
        "execute_tool add",
    ]
    assert all(parent_is(s, sub_run) for s in children)
    assert mine.value(semconv.AGENT_RUNS.name) == 1
    assert mine.value(semconv.CLIENT_OPERATION_DURATION.name) == 2
    assert parent_is(sub_run, parent)  # one trace: the user's sub-agent under our parent run
    # The instrumentor runs the user's tool body under the user's execute_tool span.
    assert parent_is(mine.span("GET /add"), mine.span("execute_tool add"))
    assert internal_errors(telemetry) == 0 and internal_errors(mine) == 0


@pytest.mark.parametrize("on", ["model", "tool"])
def test_handler_on_a_model_or_a_tool_only_is_not_doubled(
    telemetry: InMemoryTelemetry,
    instrumentor: SymfonicLangChainInstrumentor,
    mine: InMemoryTelemetry,
    on: str,
) -> None:
    """The model's (tool's) runs are the user's handler's; ours keeps the agent run."""
    handler = LangChainCallbackHandler(handler=mine.track(mine.handler()))
    callbacks = {"callbacks": [handler]}
    model = ScriptedChatModel([tool_turn(), "3"], **(callbacks if on == "model" else {}))
    tool = add.model_copy(update=callbacks) if on == "tool" else add
    react_agent(model, [tool]).invoke({"messages": [("user", "1+2")]})

    spans = [*telemetry.spans(), *mine.spans()]
    assert len(named(spans, "chat")) == 2 and len(named(spans, "execute_tool")) == 1
    theirs = named(mine.spans(), "chat" if on == "model" else "execute_tool")
    assert len(theirs) == (2 if on == "model" else 1)
    root = telemetry.span(AGENT_SPAN)
    assert all(parent_is(span, root) for span in theirs)  # standalone, under our agent run
    assert telemetry.value(semconv.AGENT_RUNS.name) == 1
    assert mine.value(semconv.AGENT_RUNS.name) == 0
    durations = semconv.CLIENT_OPERATION_DURATION.name
    by_model = mine if on == "model" else telemetry  # who measured the model calls, alone
    assert by_model.value(durations) == 2
    assert telemetry.value(durations) + mine.value(durations) == 2
    tokens = semconv.CLIENT_TOKEN_USAGE.name
    assert by_model.value(tokens) > 0
    assert telemetry.value(tokens) + mine.value(tokens) == by_model.value(tokens)


class Shelf(BaseRetriever):
    """A retriever whose body opens a client span, as a vector store's HTTP client would."""

    tracer: Any

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        with self.tracer.start_as_current_span("GET /shelf"):
            return [Document(page_content=f"{query}: shelf 2")]


def test_retriever_recorded_by_the_users_handler_runs_under_its_span(
    telemetry: InMemoryTelemetry,
    instrumentor: SymfonicLangChainInstrumentor,
    mine: InMemoryTelemetry,
) -> None:
    handler = LangChainCallbackHandler(handler=mine.track(mine.handler()))
    shelf = Shelf(tracer=mine.tracer_provider.get_tracer("shelf-client"))
    assert shelf.invoke("socks", config={"callbacks": [handler]})[0].page_content.endswith("2")

    assert telemetry.spans() == []
    (retrieval,) = named(mine.spans(), "retrieval")
    assert parent_is(mine.span("GET /shelf"), retrieval)


# --- concurrency: no cross-parenting, nothing leaks into the caller ----------------------------


def check_turns(telemetry: InMemoryTelemetry, callers: dict[int, ReadableSpan | None]) -> None:
    """One tree per turn, each under its own caller's span, with its own tenant throughout."""
    agent_spans = [s for s in telemetry.spans() if not s.name.startswith("caller")]
    assert_one_tree_per_run(agent_spans, runs=len(callers), chats=2, tools=1)
    for members in by_trace(agent_spans).values():
        (tool_span,) = named(members, "execute_tool")
        call_id = str((tool_span.attributes or {})[semconv.GEN_AI_TOOL_CALL_ID])
        i = int(call_id.split("-")[1])  # ConversationModel's call id: call-{i}-{i+1}
        assert {(s.attributes or {})[semconv.TENANT_ID] for s in members} == {f"t{i}"}
        caller = callers[i]
        if caller is not None:
            root = next(s for s in members if s.name == AGENT_SPAN)
            assert parent_is(root, caller)
    for i in callers:
        assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: f"t{i}"}) == 1
    assert internal_errors(telemetry) == 0


def threaded_turns(telemetry: InMemoryTelemetry) -> dict[int, ReadableSpan | None]:
    """``RUNS`` turns on a thread pool, each inside a caller span of its own."""
    tracer = telemetry.tracer_provider.get_tracer("app")
    agent = conversation_agent()

    def turn(i: int) -> tuple[str, bool, bool]:
        with tracer.start_as_current_span(f"caller {i}") as caller:
            out = agent.invoke(question(i), config={"metadata": {"tenant_id": f"t{i}"}})
            still_mine = trace.get_current_span() is caller
        return out["messages"][-1].content, still_mine, trace.get_current_span().is_recording()

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(turn, range(RUNS)))
    assert [answer for answer, _, _ in results] == [f"The sum is {2 * i + 1}." for i in range(RUNS)]
    assert all(still_mine and not leaked for _, still_mine, leaked in results)
    callers = {int(s.name.split()[1]): s for s in telemetry.spans() if s.name.startswith("caller")}
    return dict(sorted(callers.items()))


async def gathered_turns() -> None:
    """``RUNS`` concurrent ``ainvoke`` turns, each under its own ``tenant_scope``."""
    agent = conversation_agent()

    async def turn(i: int) -> str:
        with tenant_scope(f"t{i}"):
            out = await agent.ainvoke(question(i))
        assert trace.get_current_span() is trace.INVALID_SPAN  # nothing left attached
        return str(out["messages"][-1].content)

    answers = await asyncio.gather(*(turn(i) for i in range(RUNS)))
    assert answers == [f"The sum is {2 * i + 1}." for i in range(RUNS)]


def test_thread_pool_turns_stay_apart(
    telemetry: InMemoryTelemetry, instrumentor: SymfonicLangChainInstrumentor
) -> None:
    check_turns(telemetry, threaded_turns(telemetry))
    assert trace.get_current_span() is trace.INVALID_SPAN


async def test_gathered_async_turns_stay_apart(
    telemetry: InMemoryTelemetry, instrumentor: SymfonicLangChainInstrumentor
) -> None:
    await gathered_turns()
    check_turns(telemetry, dict.fromkeys(range(RUNS)))
    assert trace.get_current_span() is trace.INVALID_SPAN


# --- uninstrument mid-process ------------------------------------------------------------------


def wrapped_methods() -> list[str]:
    """Everything the instrumentor wraps that is still a wrapt wrapper."""
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.runnables import config as runnable_config
    from langchain_core.vectorstores import VectorStoreRetriever
    from langgraph._internal import _runnable

    targets: dict[str, Callable[..., Any]] = {
        "manager.__init__": vars(BaseCallbackManager)["__init__"],
        "manager.add_handler": vars(BaseCallbackManager)["add_handler"],
        "langchain step": runnable_config._set_config_context,
        "langgraph step": _runnable._set_config_context,
        "retriever body": vars(VectorStoreRetriever)["_get_relevant_documents"],
        "own retriever body": vars(Shelf)["_get_relevant_documents"],
        "embeddings": vars(DeterministicFakeEmbedding)["embed_query"],
    }
    return [k for k, v in targets.items() if isinstance(v, FunctionWrapper | BoundFunctionWrapper)]


async def test_uninstrument_between_turns_leaves_nothing_behind(
    telemetry: InMemoryTelemetry,
) -> None:
    with langchain_instrumented(telemetry) as instrumentor:
        handler = instrumentor.callback_handler
        assert len(wrapped_methods()) == 7
        threaded_turns(telemetry)
        await gathered_turns()
        recorded = len(telemetry.spans())
        assert len(named(telemetry.spans(), AGENT_SPAN)) == 2 * RUNS

    assert wrapped_methods() == []
    threaded_turns(telemetry)
    await gathered_turns()
    assert len([s for s in telemetry.spans() if not s.name.startswith("caller")]) == (
        recorded - RUNS  # the second batch's caller spans only
    )
    assert handler is not None and handler.tracked_runs == handler.tracked_calls == 0


def test_uninstrument_during_a_turn_ends_that_turn_and_records_no_more(
    telemetry: InMemoryTelemetry,
) -> None:
    """A turn in flight keeps the handler LangChain already gave it, so it still ends."""
    entered, release = threading.Event(), threading.Event()

    def wait(a: int, b: int) -> int:
        """Add, slowly."""
        entered.set()
        release.wait(10)
        return a + b

    slow_agent = react_agent(
        ScriptedChatModel([tool_turn(), "3"]), [StructuredTool.from_function(wait, name="add")]
    )
    with ThreadPoolExecutor(max_workers=1) as pool:
        with langchain_instrumented(telemetry) as instrumentor:
            handler = instrumentor.callback_handler
            in_flight = pool.submit(slow_agent.invoke, {"messages": [("user", "1+2")]})
            assert entered.wait(10)
        release.set()  # uninstrumented while the tool runs
        assert in_flight.result(10)["messages"][-1].content == "3"
    assert_one_tree_per_run(telemetry.spans(), runs=1, chats=2, tools=1)
    scripted_agent(tool_turn(), "3").invoke({"messages": [("user", "1+2")]})
    assert len(telemetry.spans()) == 4
    assert handler is not None and handler.tracked_runs == handler.tracked_calls == 0


# --- the handler options, through instrument() and the environment -----------------------------


@pytest.mark.parametrize("from_env", [False, True], ids=["argument", "environment"])
def test_instrument_options_reach_every_run(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, from_env: bool
) -> None:
    """``node_spans``, ``agent_name``, ``tenant_id`` as ``instrument()`` arguments; content
    capture as an argument or from ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``."""
    monkeypatch.setenv(semconv.CAPTURE_CONTENT_ENV, "true" if from_env else "false")
    options: dict[str, Any] = {} if from_env else {"capture_content": True}
    instrumentor = SymfonicLangChainInstrumentor()
    instrumentor.instrument(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        node_spans=True,
        agent_name="support-bot",
        tenant_id="acme",
        **options,
    )
    try:
        handler = instrumentor.callback_handler
        assert handler is not None
        telemetry.track(handler.handler)
        scripted_agent(tool_turn(), "The sum is 3.").invoke({"messages": [("user", "1+2")]})
    finally:
        instrumentor.uninstrument()

    root = telemetry.span(semconv.agent_span_name("support-bot"))
    nodes = named(telemetry.spans(), f"{semconv.OP_INVOKE_NODE} ")
    assert sorted(s.name for s in nodes) == [
        "invoke_node agent",
        "invoke_node agent",
        "invoke_node tools",
    ]
    assert all(parent_is(node, root) for node in nodes)
    assert "1+2" in str((root.attributes or {})[semconv.GEN_AI_INPUT_MESSAGES])
    assert {(s.attributes or {})[semconv.TENANT_ID] for s in telemetry.spans()} == {"acme"}
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 1
