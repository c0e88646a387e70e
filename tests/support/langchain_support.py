"""Helpers for the LangChain / LangGraph adapter tests: agents, tools, span-tree checks."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import json
import logging
import random
import sys
import threading
import time
import warnings
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent, tools_condition
from langgraph.types import interrupt
from opentelemetry.sdk.trace import ReadableSpan
from wrapt import BoundFunctionWrapper, FunctionWrapper

from symfonic_otel import semconv
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.testing.scripted import ScriptedChatModel
from tests.support.chain_graph_support import chain_graph, model_node
from tests.support.wire_server import POLL_S

AGENT_SPAN = semconv.agent_span_name("symfonic")
USAGE = {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18}


def call(name: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def tool_turn(a: int = 1, b: int = 2, call_id: str = "c1") -> AIMessage:
    """A model turn that only calls ``add``, with token usage."""
    return AIMessage(
        content="", tool_calls=[call("add", {"a": a, "b": b}, call_id)], usage_metadata=USAGE
    )


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def broken(x: int) -> int:
    """Always fails."""
    raise ValueError("nope")


@tool
def ask_human(question: str) -> str:
    """Ask the operator and wait for the answer (a LangGraph interrupt)."""
    answer = interrupt(question)
    return str(answer)


@tool
async def slow(seconds: float) -> str:
    """Sleep, so a test can cancel the run mid-tool."""
    await asyncio.sleep(seconds)
    return "done"


def react_agent(model: BaseChatModel, tools: Any, **kwargs: Any) -> Any:
    """LangGraph's prebuilt ReAct agent (its deprecation notice points at a package we lack)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(model, tools, **kwargs)


def scripted_agent(*turns: AIMessage | str | BaseException, **kwargs: Any) -> Any:
    """The real LangGraph prebuilt ReAct agent over a scripted model and ``add``."""
    return react_agent(ScriptedChatModel(list(turns)), [add], **kwargs)


def raw_react_graph(model: BaseChatModel, tools: Sequence[Any]) -> Any:
    """A hand-built ReAct graph (no ``remaining_steps`` guard), so recursion limits raise."""
    bound = model.bind_tools(tools)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile()


def model_only_graph(model: BaseChatModel) -> Any:
    """A one-node graph whose final AI message is whatever the model returned."""
    return chain_graph(("agent", model_node(model)))


class ConversationModel(BaseChatModel):
    """Stateless model for concurrency tests: replies from the conversation, not a script.

    First turn: call ``add`` with the two numbers of the question; after the tool result: answer
    with it. Each call sleeps a little (``await`` under async) so concurrent runs interleave.
    """

    model_name: str = "conversation-model"

    @property
    def _llm_type(self) -> str:
        return "conversation"

    def bind_tools(
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self

    def _reply(self, messages: list[BaseMessage]) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            message = AIMessage(content=f"The sum is {last.content}.", usage_metadata=USAGE)
        else:
            human = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
            a, b = (int(x) for x in str(human.content).split("+"))
            message = tool_turn(a, b, call_id=f"call-{a}-{b}")
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        time.sleep(random.uniform(0.0, 0.003))
        return self._reply(messages)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        await asyncio.sleep(random.uniform(0.0, 0.003))
        return self._reply(messages)


def conversation_agent() -> Any:
    return react_agent(ConversationModel(), [add])


def question(i: int) -> dict[str, Any]:
    return {"messages": [("user", f"{i}+{i + 1}")]}


def by_trace(spans: Sequence[ReadableSpan]) -> dict[int, list[ReadableSpan]]:
    grouped: dict[int, list[ReadableSpan]] = defaultdict(list)
    for span in spans:
        assert span.context is not None
        grouped[span.context.trace_id].append(span)
    return dict(grouped)


def assert_one_tree_per_run(
    spans: Sequence[ReadableSpan], runs: int, chats: int, tools: int
) -> None:
    """Every run is its own trace: one agent span, its chat and tool spans directly under it."""
    traces = by_trace(spans)
    assert len(traces) == runs, f"expected {runs} traces, got {len(traces)}"
    for members in traces.values():
        agents = [s for s in members if s.name == AGENT_SPAN]
        assert len(agents) == 1, [s.name for s in members]
        root = agents[0]
        assert root.context is not None
        run_id = (root.attributes or {})[semconv.RUN_ID]
        children = [s for s in members if s is not root]
        assert sum(s.name.startswith("chat") for s in children) == chats
        assert sum(s.name.startswith("execute_tool") for s in children) == tools
        for child in children:
            assert child.parent is not None and child.parent.span_id == root.context.span_id
            assert (child.attributes or {})[semconv.RUN_ID] == run_id


class DetachErrors(logging.Handler):
    """Collects what the ``opentelemetry.context`` logger says (e.g. "Failed to detach context")."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def detach_errors_absent() -> Iterator[None]:
    """Fails the block if the ``opentelemetry.context`` logger reported anything inside it."""
    collector = DetachErrors()
    logger = logging.getLogger("opentelemetry.context")
    logger.addHandler(collector)
    try:
        yield
    finally:
        logger.removeHandler(collector)
    assert not collector.messages, collector.messages


@contextlib.contextmanager
def langchain_instrumented(telemetry: Any) -> Iterator[Any]:
    """``SymfonicLangChainInstrumentor`` on the test's providers, uninstrumented afterwards."""
    from symfonic_otel.instrumentation import SymfonicLangChainInstrumentor

    instrumentor = SymfonicLangChainInstrumentor()
    instrumentor.instrument(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    handler = instrumentor.callback_handler
    assert handler is not None
    telemetry.track(handler.handler)
    try:
        yield instrumentor
    finally:
        instrumentor.uninstrument()


@pytest.fixture
def no_detach_errors() -> Iterator[None]:
    """Fixture form of ``detach_errors_absent`` (``pytestmark = usefixtures(...)``)."""
    with detach_errors_absent():
        yield


@pytest.fixture
def instrumentor(telemetry: Any) -> Iterator[Any]:
    """Fixture form of ``langchain_instrumented`` on the test's ``telemetry``."""
    with langchain_instrumented(telemetry) as instrumentor:
        yield instrumentor


class RecordingHandler(OTelCallbackHandler):
    """The real core handler that also keeps what the adapter handed it, per entry point.

    The adapter's contract with the core is the events and keywords it passes (stop reasons,
    the answered verdict); telemetry is still recorded by the real handler underneath.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []

    def agent_start(self, event: Any, **kwargs: Any) -> None:
        self.calls.append(("agent_start", event, kwargs))
        super().agent_start(event, **kwargs)

    def agent_end(self, event: Any, **kwargs: Any) -> None:
        self.calls.append(("agent_end", event, kwargs))
        super().agent_end(event, **kwargs)

    def llm_end(self, event: Any, **kwargs: Any) -> None:
        self.calls.append(("llm_end", event, kwargs))
        super().llm_end(event, **kwargs)

    def record_model_call(self, call: Any, hints: Any) -> None:
        """The adapter's model calls arrive as records (``ModelCall``), not LLMEnd events."""
        self.calls.append(("model_call", call, {"hints": hints}))
        super().record_model_call(call, hints)

    def react_loop_end(self, event: Any) -> None:
        self.calls.append(("react_loop_end", event, {}))
        super().react_loop_end(event)

    def of(self, method: str) -> list[tuple[Any, dict[str, Any]]]:
        return [(event, kwargs) for name, event, kwargs in self.calls if name == method]

    def agent_end_call(self) -> tuple[Any, dict[str, Any]]:
        """The one AgentEnd handed to the core (fails when there are none or several)."""
        ends = self.of("agent_end")
        assert len(ends) == 1, ends
        return ends[0]


def recording_handler(telemetry: Any, **kwargs: Any) -> RecordingHandler:
    handler = RecordingHandler(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider, **kwargs
    )
    telemetry.track(handler)
    return handler


def internal_errors(telemetry: Any) -> float:
    """``internal_error`` drops counted by the core handler (a guard swallowed an exception)."""
    return float(
        telemetry.value(
            semconv.DROPPED_EVENTS.name, {semconv.TELEMETRY_DROP_REASON: "internal_error"}
        )
    )


class WireServer:
    """A loopback HTTP server replying to each POST with the next scripted JSON body.

    The real provider adapters (``ChatOpenAI``, ``ChatAnthropic``) talk to it over real HTTP, so
    their own parsing produces the ``response_metadata`` the callbacks see.
    """

    def __init__(self, bodies: Sequence[dict[str, Any] | str]) -> None:
        self._bodies = list(bodies)
        self.paths: list[str] = []
        self.traceparents: list[str | None] = []
        server = self

        class Reply(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.paths.append(self.path)
                server.traceparents.append(self.headers.get("traceparent"))
                scripted = server._bodies.pop(0)  # raw text (NDJSON) as is, else JSON
                body = (scripted if isinstance(scripted, str) else json.dumps(scripted)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Reply)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(POLL_S,), daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


# Modules OpenLLMetry wraps when they are installed, imported first so the snapshot holds them.
OPTIONAL_TARGETS = ("langchain_openai.chat_models.base", "langchain_openai.llms.base")


def _namespaces() -> Iterator[tuple[Any, Mapping[str, object]]]:
    """LangChain's and LangGraph's modules and the classes each defines, with their namespaces."""
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(("langchain", "langgraph")):
            continue
        namespace = vars(module)
        yield module, namespace
        for value in list(namespace.values()):
            if isinstance(value, type) and value.__module__ == name:
                yield value, vars(value)


Snapshot = dict[Any, dict[str, object]]


def wrapt_snapshot() -> Snapshot:
    """Every attribute of LangChain's and LangGraph's modules and of their classes (a copy of
    each namespace: taken around every instrumentor a test installs, so it has to be cheap)."""
    for name in OPTIONAL_TARGETS:
        if importlib.util.find_spec(name.split(".")[0]) is not None:
            importlib.import_module(name)
    return {owner: dict(namespace) for owner, namespace in _namespaces()}


def restore_unwrapped(before: Snapshot) -> None:
    """Put back what a wrapt wrapper replaced since ``before``. OpenLLMetry 0.62's uninstrument
    leaves ``BaseCallbackManager.__init__``, ``Pregel.stream`` and its ``langchain_openai``
    wrappers in place (it hands ``unwrap`` module paths that do not resolve), so later tests
    would run with its callback handler and header injection."""
    wrappers = (FunctionWrapper, BoundFunctionWrapper)
    for owner, namespace in _namespaces():
        earlier = before.get(owner)
        if earlier is None:
            continue
        for key, value in list(namespace.items()):
            if isinstance(value, wrappers) and key in earlier and earlier[key] is not value:
                setattr(owner, key, earlier[key])
