"""The span processor judges each agent invocation, not each trace.

Real instrumentations and frameworks with scripted models, read back through the SDK's in-memory
reader: LangChain ``create_agent`` call-limit middlewares (both exits) under the three peer
LangChain instrumentations; two requests of one upstream trace and a retry (Pydantic AI); a
supervisor whose first sub-agent is capped and second answers (Pydantic AI, agents as tools).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware, ToolCallLimitMiddleware
from langchain_core.runnables import RunnableConfig
from langchain_openai import ChatOpenAI
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from symfonic_otel import semconv
from tests.support.langchain_support import add
from tests.support.span_processor_support import (
    LANGCHAIN_INSTRUMENTATIONS,
    PYDANTIC_AI,
    app_request,
    openai_reply,
    rig,
    tenant_context,
)
from tests.support.wire_server import serve

pytestmark = pytest.mark.timeout(120)
MIDDLEWARES = ("model_call_limit", "tool_call_limit")
EXITS = ("end", "error")


def _middleware(kind: str, exit_behavior: str) -> Any:
    if kind == "model_call_limit":
        return ModelCallLimitMiddleware(run_limit=2, exit_behavior=exit_behavior)  # type: ignore[arg-type]
    return ToolCallLimitMiddleware(run_limit=2, exit_behavior=exit_behavior)  # type: ignore[arg-type]


def _run_create_agent(peers: Any, middleware: Any, tenant: str, answer: bool) -> None:
    """``create_agent`` over the real ``ChatOpenAI`` (loopback): a model that keeps calling
    ``add`` (the middleware ends the run), or one that answers after one tool call."""
    if answer:
        replies = [openai_reply("tool_calls", call=0), openai_reply("stop", "The sum is 2.")]
    else:
        replies = [openai_reply("tool_calls", call=i) for i in range(6)]
    config: RunnableConfig = {
        "metadata": {"tenant_id": tenant, "user_id": tenant},
        "recursion_limit": 50,
    }
    with serve(*replies) as server, app_request(peers, tenant):
        model = ChatOpenAI(
            model="gpt-4o-mini", api_key="test", base_url=f"{server.url}/v1", max_retries=0
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            agent = create_agent(model, [add], middleware=[middleware])
        with contextlib.suppress(Exception), tenant_context(peers, tenant):  # exit "error"
            agent.invoke({"messages": [("user", "1+1")]}, config=config)


@pytest.mark.parametrize("exit_behavior", EXITS)
@pytest.mark.parametrize("kind", MIDDLEWARES)
@pytest.mark.parametrize("name", LANGCHAIN_INSTRUMENTATIONS)
def test_a_call_limit_middleware_is_a_step_cap_under_each_peer(
    name: str, kind: str, exit_behavior: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rig(name, False, monkeypatch) as peers:
        _run_create_agent(peers, _middleware(kind, exit_behavior), "globex", answer=False)
        _run_create_agent(peers, _middleware(kind, exit_behavior), "acme", answer=True)

        assert peers.bails("globex") == {"tool_calls_with_no_text": 1}
        assert peers.stop_reasons("globex") == {semconv.STOP_REASON_RECURSION_LIMIT: 1}
        outcome = "completed" if exit_behavior == "end" else "error"
        assert {key[0]: value for key, value in peers.runs("globex").items()} == {outcome: 1}
        assert peers.bails("acme") == {}
        assert semconv.STOP_REASON_RECURSION_LIMIT not in peers.stop_reasons("acme")
        assert sum(peers.runs("acme").values()) == 1
        assert peers.processor.open_traces == 0


# --- requests, retries and sub-agents (Pydantic AI's own spans) -------------------------------


def _pydantic_agent(name: str, *, answer: bool, peers: Any, **kwargs: Any) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if answer and len(messages) > 1:
            return ModelResponse(parts=[TextPart(f"{name} says 3.")])
        return ModelResponse(parts=[ToolCallPart("add_numbers", {"a": 1, "b": 2})])

    settings = InstrumentationSettings(
        tracer_provider=peers.memory.tracer_provider,
        meter_provider=peers.memory.meter_provider,
        include_content=True,
    )
    agent = Agent(
        FunctionModel(model), name=name, capabilities=[Instrumentation(settings=settings)], **kwargs
    )

    @agent.tool_plain
    def add_numbers(a: int, b: int) -> int:
        return a + b

    return agent


def _limited(agent: Any) -> str:
    from pydantic_ai import UsageLimitExceeded, UsageLimits

    try:
        return str(agent.run_sync("1+2", usage_limits=UsageLimits(request_limit=3)).output)
    except UsageLimitExceeded:
        return "no answer"


async def _limited_async(agent: Any) -> str:
    from pydantic_ai import UsageLimitExceeded, UsageLimits

    try:
        return str((await agent.run("1+2", usage_limits=UsageLimits(request_limit=3))).output)
    except UsageLimitExceeded:  # the sub-agent's cap, caught by its caller
        return "no answer"


@contextlib.contextmanager
def _upstream(trace_id: int, span_id: int) -> Iterator[None]:
    """A request whose ``traceparent`` names ``trace_id`` / ``span_id`` (a remote parent)."""
    remote = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(1))
    token = otel_context.attach(trace.set_span_in_context(NonRecordingSpan(remote)))
    try:
        yield
    finally:
        otel_context.detach(token)


def _request(peers: Any, tenant: str) -> contextlib.AbstractContextManager[Any]:
    tracer = peers.memory.tracer_provider.get_tracer("the-application")
    return tracer.start_as_current_span("POST /chat", attributes={semconv.TENANT_ID: tenant})


@pytest.mark.parametrize("same_parent", [False, True], ids=["two-requests", "a-retry"])
def test_requests_sharing_an_upstream_trace_are_runs_of_their_own(
    same_parent: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One trace id (a gateway that keeps one trace per session), the first request answers,
    the second hits its usage limit: two runs, one bail. A retry (the same remote parent twice)
    is two runs too."""
    with rig(PYDANTIC_AI, True, monkeypatch) as peers:
        with _upstream(0xAB, 0x1), _request(peers, "acme"):
            _limited(_pydantic_agent("helper", answer=True, peers=peers))
        with _upstream(0xAB, 0x1 if same_parent else 0x2), _request(peers, "acme"):
            _limited(_pydantic_agent("helper", answer=False, peers=peers))

        assert peers.runs("acme") == {("completed", False): 1, ("error", None): 1}
        assert peers.bails("acme") == {"tool_calls_with_no_text": 1}
        assert peers.processor.open_traces == 0


def test_a_capped_sub_agent_counts_once_and_the_supervisor_on_its_own_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with rig(PYDANTIC_AI, True, monkeypatch) as peers:
        researcher = _pydantic_agent("researcher", answer=False, peers=peers)
        writer = _pydantic_agent("writer", answer=True, peers=peers)
        supervisor = _supervisor(peers, researcher, writer)
        with _request(peers, "acme"):
            result = supervisor.run_sync("Research then write.")
        assert result.output == "Here is the report."

        by_agent = _by_agent(peers, semconv.AGENT_RUNS.name)
        assert by_agent == {
            ("researcher", "error"): 1,
            ("writer", "completed"): 1,
            ("supervisor", "completed"): 1,
        }
        assert _by_agent(peers, semconv.SILENT_BAILS.name, semconv.REACT_TERMINATION_REASON) == {
            ("researcher", "tool_calls_with_no_text"): 1
        }


def _supervisor(peers: Any, researcher: Any, writer: Any) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(1 for message in messages if message.kind == "request")
        if turn == 1:
            return ModelResponse(parts=[ToolCallPart("research", {})])
        if turn == 2:
            return ModelResponse(parts=[ToolCallPart("write", {})])
        return ModelResponse(parts=[TextPart("Here is the report.")])

    settings = InstrumentationSettings(
        tracer_provider=peers.memory.tracer_provider,
        meter_provider=peers.memory.meter_provider,
        include_content=True,
    )
    supervisor = Agent(
        FunctionModel(model), name="supervisor", capabilities=[Instrumentation(settings=settings)]
    )

    @supervisor.tool_plain
    async def research() -> str:
        return await _limited_async(researcher)

    @supervisor.tool_plain
    async def write() -> str:
        return await _limited_async(writer)

    return supervisor


def _by_agent(peers: Any, name: str, key: str = semconv.RUN_OUTCOME) -> dict[tuple[str, str], Any]:
    found: dict[tuple[str, str], Any] = {}
    for attrs, value in peers.memory.points(name):
        if attrs.get(semconv.TENANT_ID) == "acme" and value:
            pair = (attrs[semconv.GEN_AI_AGENT_NAME], attrs[key])
            found[pair] = found.get(pair, 0) + value
    return found


@pytest.mark.parametrize("content", [True, False], ids=["capture-on", "capture-off"])
def test_openinference_graph_under_an_application_span_is_one_run(
    content: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a server span the LangGraph chain is no root, and OpenInference marks each node
    named "agent" as an ``AGENT``: still one run per request, not one per model turn."""
    from tests.support.span_processor_support import ANSWER, CAP_ANSWERED, OPENINFERENCE

    with rig(OPENINFERENCE, content, monkeypatch) as peers:
        tracer = peers.memory.tracer_provider.get_tracer("the-application")
        for tenant, scenario in (("globex", CAP_ANSWERED), ("acme", ANSWER)):
            with tracer.start_as_current_span("POST /chat"):
                peers.run(scenario, tenant)
        assert peers.bails("globex") == {"tool_calls_with_no_text": 1}
        assert sum(peers.runs("globex").values()) == 1
        assert peers.bails("acme") == {}
        assert sum(peers.runs("acme").values()) == 1
